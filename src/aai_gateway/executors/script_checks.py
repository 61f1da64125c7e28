"""The checks `validate` adds for script templates (AppleScript, JXA): what each would refuse at call time, found
before, at the script's JSON pointer."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from aai_gateway.descriptor.validate import Loaded
from aai_gateway.errors import AaiError
from aai_gateway.executors import applescript, jxa
from aai_gateway.problems import Problem, pointer

PREPARERS: Mapping[str, Callable[[str, Mapping[str, Any]], object]] = {
    "applescript": applescript.prepare,
    "jxa": jxa.prepare,
}


def script_problems(loaded: Loaded) -> list[Problem]:
    """The script templates of a valid descriptor that would be refused when their tool is called."""
    if loaded.descriptor is None or loaded.descriptor.shape != "multi":
        return []
    problems: list[Problem] = []
    for platform, block in loaded.descriptor.document["platforms"].items():
        prepare = PREPARERS.get(block.get("automation"))
        if prepare is None:
            continue
        for index, tool in enumerate(block.get("tools", [])):
            script = tool.get("script")
            if not isinstance(script, str):
                continue
            try:
                prepare(script, tool.get("parameters") or {"type": "object", "properties": {}})
            except (AaiError, RecursionError) as exc:
                detail = exc.detail if isinstance(exc, AaiError) else "is nested too deeply to check"
                at = pointer(["platforms", platform, "tools", index, "script"])
                problems.append(Problem(loaded.source, at, detail))
    return problems


def with_script_checks(loaded: Loaded) -> Loaded:
    """`loaded`, invalid if one of its scripts would be refused at call time."""
    found = script_problems(loaded)
    if not found:
        return loaded
    return Loaded(loaded.source, None, (*loaded.problems, *found))
