"""The example workflows shipped with the package, and copying them into a workflows folder (never over a
file already there: a person's edits are theirs)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib.resources import as_file, files
from pathlib import Path
from typing import Literal

from aai_gateway.problems import Problem
from aai_gateway.workflows.saved import Saved, read


@dataclass(frozen=True, slots=True)
class Copied:
    id: str
    path: Path
    outcome: Literal["installed", "kept", "failed"]
    """installed; kept (a file of that name was there, left as it is); failed (see `why`)."""
    why: str = ""


def examples() -> list[Saved | list[Problem]]:
    """Each shipped example as `saved.read` finds it (a broken one would be a bug: its tests say so)."""
    folder = files("aai_gateway.workflows").joinpath("examples")
    with as_file(folder) as path:
        return [read(file) for file in sorted(Path(path).glob("*.json"))]


def install(folder: Path) -> list[Copied]:
    """Copy every example into `folder`, leaving any file already there as it is."""
    copied: list[Copied] = []
    source = files("aai_gateway.workflows").joinpath("examples")
    with as_file(source) as path:
        for file in sorted(Path(path).glob("*.json")):
            target = folder / file.name
            workflow_id = file.name.removesuffix(".json")
            try:
                folder.mkdir(parents=True, exist_ok=True)
                data = file.read_bytes()
                handle = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
            except FileExistsError:
                copied.append(Copied(workflow_id, target, "kept"))
                continue
            except OSError as exc:
                copied.append(Copied(workflow_id, target, "failed", exc.strerror or str(exc)))
                continue
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            copied.append(Copied(workflow_id, target, "installed"))
    return copied
