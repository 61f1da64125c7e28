"""Scanning the file system for `aai.json` descriptors.

`<scanPath>/<appId>/aai.json` everywhere (seed 003); on macOS also the bundles'
`/Applications/*.app/Contents/Resources/aai.json` and `~/Applications/…` (seed 004). A scan never
raises for a bad file or directory: it reports the problem and goes on.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from aai_gateway.config import Settings
from aai_gateway.descriptor.validate import Loaded
from aai_gateway.discovery.checked import Checked
from aai_gateway.discovery.registry import Scan
from aai_gateway.problems import Problem

DESCRIPTOR = "aai.json"


def bundle_roots(settings: Settings) -> tuple[Path, ...]:
    if settings.platform != "macos":
        return ()
    return (Path("/Applications"), settings.home / "Applications")


def candidates(settings: Settings, problems: list[Problem]) -> list[Path]:
    """Every descriptor file to read, in a stable order, noting scan paths that cannot be listed."""
    found: list[Path] = []
    for root in settings.scan_paths:
        found.extend(_children(root, DESCRIPTOR, problems, quiet_if_missing=root == settings.aai_home))
    for root in bundle_roots(settings):
        for app in _children(root, "", problems, quiet_if_missing=True):
            if app.name.endswith(".app"):
                path = app / "Contents" / "Resources" / DESCRIPTOR
                if os.path.lexists(path):
                    found.append(path)
    return found


def _children(root: Path, leaf: str, problems: list[Problem], *, quiet_if_missing: bool) -> Iterable[Path]:
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except FileNotFoundError:
        if not quiet_if_missing:
            problems.append(Problem(str(root), "", "scan path does not exist", "warning"))
        return []
    except NotADirectoryError:
        problems.append(Problem(str(root), "", "scan path is not a directory"))
        return []
    except OSError as exc:
        problems.append(Problem(str(root), "", f"scan path cannot be listed: {exc.strerror}"))
        return []
    paths = []
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        if not is_dir and not entry.is_symlink():
            continue
        path = Path(entry.path) / leaf if leaf else Path(entry.path)
        found = _lexists(path) if leaf else True
        if isinstance(found, OSError):
            problems.append(Problem(entry.path, "", f"folder cannot be read: {found.strerror or found}"))
        elif found:
            paths.append(path)
        elif entry.is_symlink() and not is_dir:
            problems.append(Problem(entry.path, "", "is a symlink that leads nowhere (or in a loop)"))
    return paths


def _lexists(path: Path) -> bool | OSError:
    """Whether `path` exists; the error when that cannot be told (a folder without search permission)."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        return exc
    return True


def scan(settings: Settings, previous: Scan | None = None) -> Scan:
    """Read every descriptor the settings point at; the first file to claim an app id wins.

    With `previous`, a descriptor that was good then and is broken now keeps its good version, and one
    whose bytes are unchanged is not parsed again.
    """
    problems: list[Problem] = []
    checked = Checked(settings.cache_dir, previous.parsed if previous is not None else None)
    loaded: list[Loaded] = [checked.load(p, settings.max_descriptor_bytes) for p in candidates(settings, problems)]
    checked.save()
    return Scan.build(loaded, problems, settings.platform, previous, checked.parsed)
