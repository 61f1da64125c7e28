"""A call's arguments checked against its tool's parameters schema, in bounded time, off the event loop
when it takes long.

Most schemas pass `quick_check`'s predicate (no regex in it). Otherwise `SafeValidator` runs (linear-time
regular expressions, a deadline at every keyword): first on the event loop for at most `ON_LOOP_SECONDS`,
then, if that was not enough, again in a worker thread for at most `CHECK_SECONDS`, while the loop answers
every other request. Arguments that cannot be checked in that time are refused.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import referencing.exceptions
from jsonschema.exceptions import best_match

from aai_gateway.descriptor.quick_check import Check, compile_check
from aai_gateway.descriptor.safe_schema import InvalidPattern, SafeValidator, TooSlow, deadline
from aai_gateway.errors import AaiJsonInvalid, InvalidParams
from aai_gateway.problems import describe, pointer

ON_LOOP_SECONDS = 0.05
CHECK_SECONDS = 2.0
MAX_SHOWN = 5


class ArgumentCheck:
    """The check of one tool's arguments, built once per tool."""

    def __init__(self, tool: str, schema: Mapping[str, Any]) -> None:
        self.tool = tool
        self.quick: Check | None = compile_check(schema)
        self.validator: Any = SafeValidator(dict(schema))

    def passes(self, args: Mapping[str, Any]) -> bool:
        """Whether `args` pass the quick check (most do): then `run` has nothing to do."""
        return self.quick is not None and type(args) is dict and self.quick(args)

    async def run(self, args: Mapping[str, Any]) -> None:
        """Raise `InvalidParams` saying what is wrong with `args`, or `AaiJsonInvalid` for a broken schema."""
        if self.passes(args):
            return
        try:
            with deadline(ON_LOOP_SECONDS):
                found = self._problems(args)
        except TooSlow:
            found = await asyncio.to_thread(self._in_time, args)
        if found:
            raise InvalidParams(found)

    def _in_time(self, args: Mapping[str, Any]) -> str | None:
        try:
            with deadline(CHECK_SECONDS):
                return self._problems(args)
        except TooSlow:
            raise InvalidParams(
                f"the arguments could not be checked against the parameters of tool '{self.tool}' within "
                f"{CHECK_SECONDS:g} s (too large or too complex for its schema); the call was not made"
            ) from None

    def _problems(self, args: Mapping[str, Any]) -> str | None:
        try:
            errors = sorted(self.validator.iter_errors(dict(args)), key=lambda e: list(map(str, e.absolute_path)))
        except (RecursionError, referencing.exceptions.Unresolvable, InvalidPattern) as exc:
            raise AaiJsonInvalid(f"the parameters schema of tool '{self.tool}' {_broken(exc)}") from None
        if not errors:
            return None
        parts = [f"{field(e.absolute_path)}: {describe(e)}" for e in errors[:MAX_SHOWN]]
        more = f" (and {len(errors) - MAX_SHOWN} more)" if len(errors) > MAX_SHOWN else ""
        return "; ".join(parts) + more


def result_problem(schema: Mapping[str, Any], result: Mapping[str, Any]) -> str | None:
    """What is wrong with a successful MCP tool result whose tool has an output schema, or None. A check that does
    not end within `ON_LOOP_SECONDS`, or a schema it cannot apply, finds nothing (the result goes back as sent)."""
    if result.get("isError") is True:
        return None
    if "structuredContent" not in result:
        return "the tool has an output schema but returned no structuredContent"
    try:
        with deadline(ON_LOOP_SECONDS):
            error = best_match(SafeValidator(dict(schema)).iter_errors(result["structuredContent"]))
    except (TooSlow, RecursionError, referencing.exceptions.Unresolvable, InvalidPattern):
        return None
    if error is None:
        return None
    where = "structuredContent" + field(error.absolute_path).removeprefix("args")
    return f"{where}: {describe(error)}"


def field(path: Any) -> str:
    """An argument's place as the agent wrote it: `args.items.0.name`."""
    parts = list(path)
    return "args" + (pointer(parts).replace("/", ".") if parts else "")


def _broken(exc: Exception) -> str:
    if isinstance(exc, RecursionError):
        return "refers back to itself; run aai-gateway validate"
    if isinstance(exc, InvalidPattern):
        return f"is broken: {exc}; run aai-gateway validate"
    return f"has a $ref leading nowhere ({exc}); run aai-gateway validate"
