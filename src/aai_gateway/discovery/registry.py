"""The index of apps the gateway serves, built from one scan."""

from __future__ import annotations

import plistlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from aai_gateway.descriptor import Descriptor
from aai_gateway.descriptor.validate import Loaded
from aai_gateway.discovery.checked import Parsed
from aai_gateway.problems import Problem


@dataclass(frozen=True, slots=True)
class Scan:
    apps: Mapping[str, Descriptor]
    """Every valid descriptor by app id, in scan order, including apps with nothing for this platform."""
    problems: tuple[Problem, ...]
    platform: str
    broken: Mapping[str, tuple[Problem, ...]] = field(default_factory=dict)
    """Errors of descriptors that failed to load, by the app id their folder names (`<appId>/aai.json`)."""
    parsed: Parsed = field(default_factory=dict)
    """Each good file's content hash and what it loaded to, by path: the next scan reuses what is unchanged."""

    @classmethod
    def build(
        cls,
        loaded: list[Loaded],
        problems: list[Problem],
        platform: str,
        previous: Scan | None = None,
        parsed: Parsed | None = None,
    ) -> Scan:
        """Index what was loaded; a file that broke since `previous` keeps its last good version serving.

        The folder of `<appId>/aai.json` names its app, and a macOS bundle's CFBundleIdentifier its own:
        a file declaring another id is not served. Files whose place names no app (a bundle without a
        readable Info.plist, `*.app` folders) come after all others, so they can only take an id no
        rightful file claims.
        """
        apps: dict[str, Descriptor] = {}
        broken: dict[str, tuple[Problem, ...]] = {}
        found = list(problems)
        last_good = {a.source: a for a in previous.apps.values()} if previous else {}
        for item in sorted(loaded, key=lambda i: _folder_id(i.source) is None):
            found.extend(item.problems)
            app = item.descriptor
            if app is None:
                app = last_good.get(item.source)
                if app is None:
                    errors = tuple(p for p in item.problems if p.severity == "error")
                    if errors and Path(item.source).name == "aai.json":
                        broken[Path(item.source).parent.name] = errors
                    continue
                found.append(
                    Problem(
                        item.source,
                        "",
                        f"the last good version of {app.app_id} keeps serving until this file is fixed",
                        "warning",
                    )
                )
            folder = _folder_id(item.source)
            pointer = "/appId" if app.shape == "multi" else "/app/id"
            if folder is not None and folder != app.app_id:
                hijack = Problem(
                    item.source,
                    pointer,
                    f"declares app id '{app.app_id}' but its folder is '{folder}'; the folder names the app, "
                    "so this file is not served (move it to a folder named after its app id)",
                )
                found.append(hijack)
                broken.setdefault(folder, (hijack,))
                continue
            bundle = _bundle_id(item.source) if folder is None else None
            if bundle is not None and bundle != app.app_id:
                found.append(
                    Problem(
                        item.source,
                        pointer,
                        f"declares app id '{app.app_id}' but its app's CFBundleIdentifier is '{bundle}'; the "
                        "bundle names the app, so this file is not served",
                    )
                )
                continue
            if app.app_id in apps:
                found.append(
                    Problem(
                        item.source,
                        "/appId",
                        f"app id '{app.app_id}' is already used by {apps[app.app_id].source}",
                    )
                )
                continue
            apps[app.app_id] = app
            if not app.served(platform):
                found.append(
                    Problem(
                        item.source,
                        "",
                        f"has no binding for {platform} or web (it has {', '.join(app.bindings)}), so it is not served",
                        "warning",
                    )
                )
        return cls(apps=apps, problems=tuple(found), platform=platform, broken=broken, parsed=parsed or {})

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "error")


class Registry:
    """The apps currently served; replaced whole on rescan so readers never see half a scan."""

    def __init__(self, scan: Scan) -> None:
        self._scan = scan

    @property
    def scan(self) -> Scan:
        return self._scan

    def replace(self, scan: Scan) -> None:
        self._scan = scan

    def served(self) -> list[Descriptor]:
        return [a for a in self._scan.apps.values() if a.served(self._scan.platform)]

    def get(self, app_id: str) -> Descriptor | None:
        app = self._scan.apps.get(app_id)
        return app if app is not None and app.served(self._scan.platform) else None


def _bundle_id(source: str) -> str | None:
    """The CFBundleIdentifier of the macOS app whose `Contents/Resources/aai.json` `source` is; None when
    `source` is no bundle's or its Info.plist cannot be read."""
    path = Path(source)
    if path.parent.name != "Resources" or path.parent.parent.name != "Contents":
        return None
    try:
        with (path.parent.parent / "Info.plist").open("rb") as info:
            found = plistlib.load(info).get("CFBundleIdentifier")
    except (OSError, ValueError, AttributeError, plistlib.InvalidFileException):
        return None
    return found if isinstance(found, str) and found else None


def _folder_id(source: str) -> str | None:
    """The app id a descriptor's place gives it: the folder of `<appId>/aai.json`; none for a macOS bundle's
    `<Name>.app/Contents/Resources/aai.json` or a `<Name>.app/aai.json`, whose id is the descriptor's own."""
    path = Path(source)
    if path.name != "aai.json":
        return None
    folder = path.parent.name
    bundle = folder == "Resources" and path.parent.parent.name == "Contents" and path.parents[2].suffix == ".app"
    return None if bundle or folder.endswith(".app") else folder
