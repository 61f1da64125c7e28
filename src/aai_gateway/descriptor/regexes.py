"""Regular expressions from schemas nobody here wrote, matched in time linear in the text.

Patterns in tools' schemas (`pattern`, `patternProperties`, `format: regex`) come from MCP servers, stores
and descriptors. Python's `re` backtracks: `^(a+)+$` against 34 a's and a `!` runs for minutes, holding
the GIL, so neither the event loop nor a thread gets a turn. These run on RE2 (PyPI `google-re2`), which
never backtracks: its program is bounded by `MAX_MEM` when compiled, and a match whose worst case (program
size times text bytes, the NFA's bound) exceeds `MAX_COST` is refused (`TooCostly`) rather than run.

RE2 has no lookaround and no backreferences. A pattern that uses them (one Python's `re` compiles but RE2
refuses) is refused as `usable`: the gateway cannot check it and leaves it to the app, saying so. A pattern
neither compiles is refused as invalid. Neither kind is ever run by a backtracking engine.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

import re2  # type: ignore[import-untyped]  # google-re2 ships no type information

MAX_MEM = 1 << 20
"""Bytes RE2 may use for one pattern's program and its DFA cache: a bigger program is refused at compile."""
MAX_COST = 50_000_000
"""Most program instructions times text bytes one match may cost: about 50 ms in RE2's slowest mode."""
MAX_PATTERN = 8192
"""Longest pattern compiled, in characters."""

_OPTIONS = re2.Options()
_OPTIONS.max_mem = MAX_MEM
_OPTIONS.log_errors = False  # RE2 would print every refused pattern on stderr
_OPTIONS.never_capture = True  # only whether it matches is asked: the fastest mode, DFA first
_UNANCHORED = re2._re2.RE2.Anchor.UNANCHORED
_UNICODE_ESCAPE = re.compile(r"\\\\|\\u\{([0-9A-Fa-f]{1,6})\}|\\u([0-9A-Fa-f]{4})")


class TooCostly(ValueError):
    """A match whose worst case is beyond `MAX_COST`: the text is too long for the pattern."""


@dataclass(frozen=True, slots=True)
class Regex:
    """A compiled pattern; `search` is `re.search(pattern, text) is not None`, in linear time."""

    pattern: str
    program: Any
    size: int

    def search(self, text: str) -> bool:
        data = text.encode("utf-8", "surrogatepass")
        if self.size * len(data) > MAX_COST:
            raise TooCostly(
                f"is too long ({len(text)} characters) to be checked against the pattern {_shown(self.pattern)}"
            )
        spans = cast("list[tuple[int, int]]", self.program.Match(_UNANCHORED, data, 0, len(data)))
        return spans[0][0] != -1


@dataclass(frozen=True, slots=True)
class Refused:
    """A pattern that is not run: `usable` when it is valid but beyond RE2 (lookaround, backreferences)."""

    pattern: str
    reason: str
    usable: bool

    @property
    def message(self) -> str:
        if self.usable:
            return (
                f"the pattern {_shown(self.pattern)} uses {self.reason}, which the gateway's linear-time "
                "regex engine does not run; the gateway does not check it and leaves it to the app"
            )
        return f"the pattern {_shown(self.pattern)} is not a valid regular expression ({self.reason})"


@lru_cache(maxsize=1024)
def compile_regex(pattern: str) -> Regex | Refused:
    """`pattern` as RE2 runs it (ECMA-262's `\\uXXXX` escapes read too), or why it is not run."""
    if len(pattern) > MAX_PATTERN:
        return Refused(pattern, f"longer than {MAX_PATTERN} characters", usable=False)
    program = re2._re2.RE2(_for_re2(pattern).encode("utf-8", "surrogatepass"), _OPTIONS)
    if program.ok():
        return Regex(pattern, program, max(int(program.ProgramSize()), 1))
    error = bytes(program.error()).decode("utf-8", "replace")
    if "pattern too large" in error:
        return Refused(pattern, "more states than the gateway's regex engine allows", usable=False)
    python_error = _python_error(pattern)
    if python_error is not None:
        return Refused(pattern, python_error, usable=False)
    return Refused(pattern, _beyond_re2(error), usable=True)


def regex_problem(pattern: Any) -> str | None:
    """Why `pattern` cannot be a schema's regex, or None when it can (a pattern left to the app can)."""
    if not isinstance(pattern, str):
        return None
    found = compile_regex(pattern)
    return found.message if isinstance(found, Refused) and not found.usable else None


def _for_re2(pattern: str) -> str:
    """ECMA-262's `\\uXXXX` and `\\u{X…}` escapes as RE2 spells them, `\\x{XXXX}`."""
    if "\\u" not in pattern:
        return pattern
    return _UNICODE_ESCAPE.sub(lambda m: m[0] if m[0] == "\\\\" else f"\\x{{{m[1] or m[2]}}}", pattern)


def _python_error(pattern: str) -> str | None:
    """Why Python's `re` does not compile `pattern` (compiled, never run), or None when it does."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            re.compile(pattern)
    except re.error as exc:
        return str(exc)
    except (RecursionError, OverflowError, ValueError) as exc:
        return str(exc) or type(exc).__name__
    return None


def _beyond_re2(error: str) -> str:
    if "(?=" in error or "(?!" in error or "(?<=" in error or "(?<!" in error:
        return "lookaround"
    if re.search(r"\\[1-9k]", error):
        return "a backreference"
    return f"a feature RE2 lacks ({error})"


def _shown(pattern: str) -> str:
    text = pattern if len(pattern) <= 80 else pattern[:77] + "..."
    return repr(text)
