"""macOS: the scriptable apps in the application folders, and the scripting definition of one.

An app bundle is scriptable when its `Contents/Info.plist` (XML or binary) sets `NSAppleScriptEnabled`
or names an `OSAScriptingDefinition`, or when `Contents/Resources` holds an `.sdef`. The folders are
`/Applications`, `/System/Applications` and `~/Applications`, each with its app bundles and those one
folder down (`/Applications/Utilities`). Reading a bundle never runs anything of it; only
`sdef_of` asks the system's `sdef` command, and only for an app that keeps its dictionary elsewhere.
"""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aai_gateway.authoring.sdef import MAX_SDEF_BYTES
from aai_gateway.descriptor import Descriptor

MAX_PLIST_BYTES = 1024 * 1024
SDEF_TIMEOUT = 30.0
DESCRIPTOR = "aai.json"


def roots(home: Path) -> tuple[Path, ...]:
    return (Path("/Applications"), Path("/System/Applications"), home / "Applications")


@dataclass(frozen=True, slots=True)
class App:
    path: Path
    name: str
    bundle_id: str | None
    sdef: Path | None
    """The scripting definition file in the bundle, if it has one."""
    bundled_descriptor: bool = False
    """The bundle carries its own Contents/Resources/aai.json."""
    described_by: tuple[str, ...] = field(default_factory=tuple)
    """App ids of the scanned descriptors whose macos binding drives this app."""

    @property
    def resources(self) -> Path:
        return self.path / "Contents" / "Resources"

    def to_json(self) -> dict[str, Any]:
        return {
            "bundleId": self.bundle_id,
            "name": self.name,
            "path": str(self.path),
            "sdef": str(self.sdef) if self.sdef else None,
            "bundledDescriptor": self.bundled_descriptor,
            "describedBy": list(self.described_by),
        }


@dataclass(frozen=True, slots=True)
class Bundle:
    """What an app bundle's Info.plist and Resources say about scripting."""

    path: Path
    info: Mapping[str, Any]
    sdef: Path | None
    scriptable: bool

    @property
    def bundle_id(self) -> str | None:
        value = self.info.get("CFBundleIdentifier")
        return value.strip() if isinstance(value, str) and value.strip() else None

    @property
    def name(self) -> str:
        for key in ("CFBundleDisplayName", "CFBundleName"):
            value = self.info.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
        return self.path.name.removesuffix(".app")


def read_plist(path: Path) -> Mapping[str, Any]:
    """An Info.plist (XML or binary) as a dict; raises ValueError saying what is wrong."""
    data = _read(path, MAX_PLIST_BYTES)
    if len(data) > MAX_PLIST_BYTES:
        raise ValueError(f"{path}: is larger than {MAX_PLIST_BYTES} bytes")
    try:
        info = plistlib.loads(data)
    except Exception as exc:  # plistlib raises InvalidFileException, ExpatError, ValueError, OverflowError, ...
        raise ValueError(f"{path}: is not a property list: {exc}") from None
    if not isinstance(info, dict):
        raise ValueError(f"{path}: is a property list but not a dictionary")
    return info


def _enabled(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in ("yes", "true", "1"))


def read_bundle(path: Path) -> Bundle:
    """The bundle at `path`; raises ValueError when it has no readable Info.plist."""
    plist = path / "Contents" / "Info.plist"
    if not plist.is_file():
        raise ValueError(f"{path} is not an app bundle: it has no Contents/Info.plist")
    info = read_plist(plist)
    resources = path / "Contents" / "Resources"
    sdef: Path | None = None
    named = info.get("OSAScriptingDefinition")
    if isinstance(named, str) and named.strip():
        candidate = resources / named.strip()
        if _inside(candidate, path) and candidate.is_file():
            sdef = candidate
    if sdef is None:
        sdef = _first_sdef(resources)
    declared = isinstance(named, str) and bool(named.strip())
    scriptable = _enabled(info.get("NSAppleScriptEnabled")) or declared or sdef is not None
    return Bundle(path, info, sdef, scriptable)


def _inside(candidate: Path, bundle: Path) -> bool:
    try:
        return candidate.resolve().is_relative_to(bundle.resolve())
    except (OSError, RuntimeError):
        return False


def _first_sdef(resources: Path) -> Path | None:
    try:
        found = sorted(p for p in resources.iterdir() if p.suffix.lower() == ".sdef" and p.is_file())
    except OSError:
        return None
    return found[0] if found else None


def _bundles(root: Path, depth: int = 1) -> Iterable[Path]:
    """`*.app` folders in `root` and, `depth` folders down, in its other folders; hidden names skipped."""
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name.lower())
    except OSError:
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            is_dir = entry.is_dir()
        except OSError:
            continue
        if not is_dir:
            continue
        if entry.name.lower().endswith(".app"):
            yield Path(entry.path)
        elif depth > 0:
            yield from _bundles(Path(entry.path), depth - 1)


def find_apps(folders: Iterable[Path], descriptors: Iterable[Descriptor] = ()) -> tuple[list[App], list[str]]:
    """The scriptable apps in `folders` (sorted by name), and the bundles that could not be read."""
    owners = described_by(descriptors)
    apps: list[App] = []
    problems: list[str] = []
    for folder in folders:
        for path in _bundles(folder):
            try:
                bundle = read_bundle(path)
            except ValueError as exc:
                problems.append(str(exc))
                continue
            if not bundle.scriptable:
                continue
            bundle_id = bundle.bundle_id
            apps.append(
                App(
                    path=path,
                    name=bundle.name,
                    bundle_id=bundle_id,
                    sdef=bundle.sdef,
                    bundled_descriptor=os.path.lexists(path / "Contents" / "Resources" / DESCRIPTOR),
                    described_by=owners.get(bundle_id.lower(), ()) if bundle_id else (),
                )
            )
    apps.sort(key=lambda a: (a.name.lower(), str(a.path)))
    return apps, problems


def described_by(apps: Iterable[Descriptor]) -> dict[str, tuple[str, ...]]:
    """Lowercased bundle id → ids of the apps whose macos binding drives it (its bundle_id, else the app id)."""
    found: dict[str, list[str]] = {}
    for app in apps:
        binding = app.bindings.get("macos")
        if binding is None:
            continue
        bundle = binding.options.get("bundle_id") or app.app_id
        found.setdefault(str(bundle).lower(), []).append(app.app_id)
    return {key: tuple(ids) for key, ids in found.items()}


def report(apps: list[App], folders: Iterable[Path], problems: Iterable[str] = ()) -> list[str]:
    """The apps as readable lines: name, bundle id and descriptors, then the bundle and its sdef."""
    where = ", ".join(str(f) for f in folders)
    lines = [f"Scriptable macOS apps: {len(apps)} (in {where})"]
    for app in apps:
        marks = []
        if app.described_by:
            marks.append(f"described by {', '.join(app.described_by)}")
        if app.bundled_descriptor:
            marks.append("aai.json in the bundle")
        mark = f"  [{'; '.join(marks)}]" if marks else ""
        lines.extend(("", f"{app.name}  {app.bundle_id or '(no bundle id)'}{mark}", f"  {app.path}"))
        lines.append(
            f"  sdef: {app.sdef}" if app.sdef else "  sdef: none in the bundle (on a Mac, `sdef APP` prints it)"
        )
    problems = list(problems)
    if problems:
        lines.extend(("", f"Unreadable bundles ({len(problems)}):", *(f"  {p}" for p in problems)))
    lines.extend(
        ("", "Write a descriptor with: aai-gateway --generate /Applications/X.app --out ~/.aai/<appId>/aai.json")
    )
    return lines


@dataclass(frozen=True, slots=True)
class Definition:
    """A scripting definition and the app it belongs to, as far as is known."""

    data: bytes
    source: str
    bundle_id: str | None = None
    name: str | None = None


def definition(path: Path) -> Definition:
    """The sdef of an .app bundle, or an .sdef file (with its app when it sits in X.app/Contents/Resources).

    Raises ValueError saying what is missing or unreadable.
    """
    if path.is_dir():
        bundle = read_bundle(path)
        data, source = sdef_of(bundle)
        return Definition(data, source, bundle.bundle_id, bundle.name)
    data = _read(path, MAX_SDEF_BYTES)
    enclosing = path.resolve().parent.parent.parent
    if path.resolve().parent.name == "Resources" and enclosing.name.lower().endswith(".app"):
        try:
            bundle = read_bundle(enclosing)
        except ValueError:
            return Definition(data, str(path))
        return Definition(data, str(path), bundle.bundle_id, bundle.name)
    return Definition(data, str(path))


def _read(path: Path, cap: int) -> bytes:
    """At most `cap` + 1 bytes (so that the reader can tell the file is too large)."""
    try:
        with path.open("rb") as handle:
            return handle.read(cap + 1)
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None


def sdef_of(bundle: Bundle) -> tuple[bytes, str]:
    """The scripting definition of a scriptable bundle and where it came from: its sdef file, else what
    the system's `sdef` command prints (macOS only). Raises ValueError when there is none."""
    if bundle.sdef is not None:
        return _read(bundle.sdef, MAX_SDEF_BYTES), str(bundle.sdef)
    if not bundle.scriptable:
        raise ValueError(
            f"{bundle.path} is not scriptable: its Info.plist sets neither NSAppleScriptEnabled nor "
            "OSAScriptingDefinition, and Contents/Resources holds no .sdef"
        )
    program = shutil.which("sdef")
    if program is None:
        raise ValueError(
            f"{bundle.path} is scriptable but keeps its dictionary outside an .sdef file; on a Mac, "
            "`sdef APP > app.sdef` writes it, and --generate takes that file"
        )
    try:
        done = subprocess.run(
            [program, str(bundle.path)],
            capture_output=True,
            timeout=SDEF_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ValueError(f"sdef {bundle.path} failed: {exc}") from None
    if done.returncode != 0 or not done.stdout.strip():
        detail = done.stderr.decode(errors="replace").strip() or f"exit status {done.returncode}"
        raise ValueError(f"sdef {bundle.path} printed no dictionary: {detail}")
    return done.stdout, f"sdef {bundle.path}"
