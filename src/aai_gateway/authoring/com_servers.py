"""Windows: the registered COM servers that run as their own process (Word.Application, Outlook.Application).

A class under `HKEY_CLASSES_ROOT\\CLSID` (and `WOW6432Node\\CLSID`, where 32-bit apps register on
64-bit Windows) is listed when it has a `LocalServer32` command and a ProgID. The registry is read
through `Registry`, a two-method seam: `WinRegistry` uses winreg (Windows only, imported when used)
and tests give a dict.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from aai_gateway.descriptor import Descriptor
from aai_gateway.errors import AutomationNotSupported

CLASS_ROOTS = ("CLSID", "WOW6432Node\\CLSID")


class Registry(Protocol):
    """Keys under HKEY_CLASSES_ROOT, named by backslash-separated paths."""

    def subkeys(self, path: str) -> list[str]:
        """The names of the key's subkeys; [] when the key does not exist."""
        ...

    def value(self, path: str, name: str = "") -> str | None:
        """A string value of the key ("" names its default value); None when the key or value is missing."""
        ...


class WinRegistry:
    """HKEY_CLASSES_ROOT through winreg; raises AutomationNotSupported where there is no winreg."""

    def __init__(self) -> None:
        try:
            import winreg  # noqa: PLC0415 (Windows only)
        except ImportError:
            raise AutomationNotSupported(
                "COM servers are listed from the Windows registry (winreg), which this system does not have"
            ) from None
        self._winreg: Any = winreg

    def subkeys(self, path: str) -> list[str]:
        reg = self._winreg
        try:
            with reg.OpenKey(reg.HKEY_CLASSES_ROOT, path) as key:
                count = reg.QueryInfoKey(key)[0]
                return [reg.EnumKey(key, index) for index in range(count)]
        except OSError:
            return []

    def value(self, path: str, name: str = "") -> str | None:
        reg = self._winreg
        try:
            with reg.OpenKey(reg.HKEY_CLASSES_ROOT, path) as key:
                found, kind = reg.QueryValueEx(key, name)
        except OSError:
            return None
        if kind in (reg.REG_SZ, reg.REG_EXPAND_SZ) and isinstance(found, str):
            return found
        return None


@dataclass(frozen=True, slots=True)
class Server:
    clsid: str
    progid: str
    """The version-independent ProgID when there is one (Word.Application), else the ProgID."""
    name: str
    server: str
    """The LocalServer32 command as registered (a path, often quoted, maybe with arguments)."""
    versioned_progid: str | None = None
    described_by: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return {
            "progid": self.progid,
            "versionedProgid": self.versioned_progid,
            "name": self.name,
            "server": self.server,
            "clsid": self.clsid,
            "describedBy": list(self.described_by),
        }


def _clean(text: str | None) -> str:
    return " ".join((text or "").split())


def find_servers(registry: Registry, descriptors: Iterable[Descriptor] = ()) -> list[Server]:
    """Every out-of-process COM server with a ProgID, sorted by ProgID, once per CLSID."""
    owners = described_by(descriptors)
    found: dict[str, Server] = {}
    for root in CLASS_ROOTS:
        for clsid in registry.subkeys(root):
            key = f"{root}\\{clsid}"
            if clsid.upper() in found:
                continue
            command = _clean(registry.value(f"{key}\\LocalServer32"))
            progid = _clean(registry.value(f"{key}\\ProgID"))
            independent = _clean(registry.value(f"{key}\\VersionIndependentProgID"))
            if not command or not (progid or independent):
                continue
            shown = independent or progid
            name = _clean(registry.value(shown)) or _clean(registry.value(key)) or shown
            ids = dict.fromkeys(owner for p in (shown, progid) if p for owner in owners.get(p.lower(), ()))
            found[clsid.upper()] = Server(
                clsid=clsid,
                progid=shown,
                name=name,
                server=command,
                versioned_progid=progid if progid and progid != shown else None,
                described_by=tuple(ids),
            )
    return sorted(found.values(), key=lambda s: (s.progid.lower(), s.clsid))


def described_by(apps: Iterable[Descriptor]) -> dict[str, tuple[str, ...]]:
    """Lowercased ProgID → ids of the apps whose windows binding creates it (the binding's progid, its
    tools' `create` actions, else the app id)."""
    found: dict[str, list[str]] = {}
    for app in apps:
        binding = app.bindings.get("windows")
        if binding is None:
            continue
        progids = {str(binding.options.get("progid") or app.app_id)}
        for tool in binding.tools:
            script = tool.options.get("script")
            if isinstance(script, list):
                progids.update(str(a["progid"]) for a in script if isinstance(a, Mapping) and a.get("progid"))
        for progid in progids:
            found.setdefault(progid.lower(), []).append(app.app_id)
    return {key: tuple(dict.fromkeys(ids)) for key, ids in found.items()}


def report(servers: list[Server]) -> list[str]:
    """The servers as readable lines: ProgID, name and descriptors, then the server and its CLSID."""
    lines = [f"COM servers (out-of-process, with a ProgID): {len(servers)}"]
    for server in servers:
        described = f"  [described by {', '.join(server.described_by)}]" if server.described_by else ""
        lines.extend(("", f"{server.progid}  {server.name}{described}", f"  {server.server}"))
        versioned = f"  (ProgID {server.versioned_progid})" if server.versioned_progid else ""
        lines.append(f"  CLSID {server.clsid}{versioned}")
    lines.extend(("", "Describe one in ~/.aai/<appId>/aai.json with a windows section (automation com, progid)."))
    return lines
