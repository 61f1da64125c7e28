"""JXA templates rewritten once into scripts whose values arrive as data, never as source.

A template is the body of JXA's `run(argv)`: `${name}` placeholders stand for the tool's arguments.
The rewrite replaces each placeholder by a read from one JSON argument (`osascript -l JavaScript -
<json>`), by its position:
- in code, the value itself: `${count} + 1` → `__aai.v["count"] + 1` (numbers stay numbers);
- as a whole '…' or "…" literal, the value's text: `"${subject}"` → `__aai.t("subject")`;
- inside a larger literal, a concatenation: `"Re: ${s}!"` → `("Re: " + __aai.t("s") + "!")`
  (`\\${` in a literal is a literal `${`);
- in a template literal, `${name}` naming a parameter reads its text; any other `${expr}` stays
  JavaScript, with placeholders inside it following these rules;
- in comments, nothing; in a regular-expression literal, a `ScriptParseError`.
The rewritten body runs through a direct `eval` inside `run(argv)`, so the value of its last
expression statement is the result, as in a script file; an `if (false) { … }` copy ahead of it lets
osascript report the template's syntax errors when it compiles, before anything runs. A template that
declares its own top-level `function run` is refused: its handler would never be called.

The values travel as one JSON text, so any text does, NUL and lone surrogates included; only the
size of a command line limits them (`ARGUMENT_LIMIT`).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aai_gateway.errors import InvalidParams, ScriptParseError
from aai_gateway.executors.jxa_tokens import (
    COMMENT,
    INSIGNIFICANT,
    NAME,
    NUMBER,
    PLACE,
    PUNCT,
    REGEX,
    STRING,
    TEMPLATE_HEAD,
    TEMPLATE_MIDDLE,
    TEMPLATE_TAIL,
    Token,
    position,
    tokenize,
)
from aai_gateway.templates import PLACEHOLDER

RESERVED = "__aai"
"""Names the runner uses; a template may not mention any name that starts with it."""

RUNNER = """if (false) {{{check}
}}
function run(argv) {{
  const __aai = (() => {{
    const v = JSON.parse(argv[0]);
    const t = (k) => (typeof v[k] === "string" ? v[k] : v[k] == null ? "" : JSON.stringify(v[k]));
    return {{ v, t }};
  }})();
  const __aai_result = eval({body});
  if (__aai_result === undefined) return "";
  return typeof __aai_result === "string" ? __aai_result : JSON.stringify(__aai_result);
}}
"""
"""The script osascript runs; `check` and `body` are the rewritten template, never argument values."""

ARGUMENT_LIMIT = 128 * 1024 - 1 if sys.platform.startswith("linux") else 1024 * 1024 - 64 * 1024
"""Bytes the JSON argument may take: Linux caps one argument at 128 KiB; macOS caps the whole command
line and environment together at 1 MiB, of which 64 KiB is left for the environment."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_TEMPLATE_EXPRESSION = frozenset({NAME, NUMBER, PUNCT})
_IDENTIFIER_PART = re.compile(r"[\w$\u200c\u200d]")


@dataclass(frozen=True, slots=True)
class Prepared:
    source: str
    body: str = ""
    """The rewritten template, as the script evaluates it."""
    names: tuple[str, ...] = ()
    """The arguments the script reads, in the order they first appear."""
    defaults: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def argv(self, args: Mapping[str, Any]) -> list[str]:
        """osascript's one argument after `-`: a JSON object of the values the script reads.

        An absent argument is its schema `default`, else null. Lone surrogates travel as `\\uXXXX`
        escapes, so JavaScript receives the same UTF-16 string.
        """
        values = {name: args[name] if name in args else self.defaults.get(name) for name in self.names}
        try:
            text = json.dumps(values, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise InvalidParams(f"the arguments cannot be sent to the script as JSON: {e}") from None
        text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
        size = len(text.encode())
        if size > ARGUMENT_LIMIT:
            largest = max(values, key=lambda name: len(json.dumps(values[name], ensure_ascii=False)))
            raise InvalidParams(
                f"the arguments take {size} bytes as JSON, more than the {ARGUMENT_LIMIT} osascript can be "
                f"given on its command line; the largest is {largest!r}"
            )
        return [text]


def prepare(template: str, parameters: Mapping[str, Any]) -> Prepared:
    """The script for `template`, given the tool's JSON Schema; raises `ScriptParseError`."""
    properties = parameters.get("properties")
    known: Mapping[str, Any] = properties if isinstance(properties, Mapping) else {}
    tokens = tokenize(template)
    _check(template, tokens)
    rewrite = _Rewrite(template, tokens, known)
    body = rewrite.run()
    defaults = {
        name: known[name]["default"]
        for name in rewrite.used
        if isinstance(known[name], Mapping) and "default" in known[name]
    }
    source = RUNNER.format(check=body, body=json.dumps(body))
    return Prepared(source, body, tuple(rewrite.used), defaults)


def _check(source: str, tokens: Sequence[Token]) -> None:
    """Balanced brackets (so the template stays inside its block), no reserved names, no own `run`."""
    pairs = {")": "(", "]": "[", "}": "{"}
    stack: list[Token] = []
    significant = [t for t in tokens if t.kind not in INSIGNIFICANT]
    for i, token in enumerate(significant):
        if token.kind == NAME and token.text.startswith(RESERVED):
            raise _error(source, token, f"{token.text} is reserved for the gateway; use another name")
        if token.kind == NAME and not stack and _declares_run(significant, i):
            raise _error(
                source,
                token,
                "the template declares its own run handler; a JXA template is the handler's body: write its "
                "statements directly (the last expression's value is the result) and use ${name} for arguments",
            )
        if token.kind != PUNCT:
            continue
        if token.text in ("(", "[", "{"):
            stack.append(token)
        elif token.text in pairs:
            if not stack or stack[-1].text != pairs[token.text]:
                raise _error(source, token, f"{token.text!r} closes nothing")
            stack.pop()
    if stack:
        raise _error(source, stack[-1], f"{stack[-1].text!r} is never closed")


def _declares_run(significant: Sequence[Token], i: int) -> bool:
    """Whether `function run(` (or `function* run(`) starts at position `i`."""
    if significant[i].text != "function":
        return False
    rest = [t.text for t in significant[i + 1 : i + 4]]
    return rest[:2] == ["run", "("] or rest == ["*", "run", "("]


class _Rewrite:
    def __init__(self, source: str, tokens: Sequence[Token], known: Mapping[str, Any]) -> None:
        self.source = source
        self.tokens = tokens
        self.known = known
        self.used: list[str] = []

    def run(self) -> str:
        out: list[str] = []
        i = 0
        while i < len(self.tokens):
            token = self.tokens[i]
            if token.kind == PLACE:
                out.append(f"__aai.v[{self._name(token, token.text[2:-1])}]")
                self._check_placement(i)
            elif token.kind == STRING:
                out.append(self._string(i))
            elif token.kind in (TEMPLATE_HEAD, TEMPLATE_MIDDLE):
                out.append(token.text)
                name, end = self._substitution(i)
                if name is not None:
                    out.append(f"__aai.t({self._name(token, name)})")
                    i = end
                    continue
            elif token.kind == REGEX and PLACEHOLDER.search(token.text):
                raise _error(
                    self.source,
                    token,
                    "a placeholder cannot be part of a regular expression literal; build it with new RegExp(${name})",
                )
            elif token.kind == COMMENT and token.text.startswith("#!"):
                out.append("//" + token.text[1:])
            else:
                out.append(token.text)
            i += 1
        return "".join(out)

    def _name(self, token: Token, name: str) -> str:
        """The JSON string literal of a parameter's name, which must be one of the tool's."""
        if name not in self.known:
            listed = ", ".join(sorted(self.known)) or "none"
            raise _error(self.source, token, f"${{{name}}} names no parameter of the tool; its parameters: {listed}")
        if name not in self.used:
            self.used.append(name)
        return json.dumps(name)

    def _check_placement(self, i: int) -> None:
        token = self.tokens[i]
        before = self.source[token.start - 1] if token.start else ""
        after = self.source[token.end : token.end + 1]
        if _IDENTIFIER_PART.match(before) or _IDENTIFIER_PART.match(after):
            raise _error(self.source, token, f"{token.text} touches a name or number; separate them")
        previous = self._neighbour(i, -1)
        if previous is not None and previous.kind == PUNCT and previous.text in (".", "?."):
            raise _error(self.source, token, f"{token.text} cannot follow '.'; write object[{token.text}]")

    def _string(self, i: int) -> str:
        token = self.tokens[i]
        quote, content = token.text[0], token.text[1:-1]
        pieces: list[str] = []
        literal_start = j = 0
        while j < len(content):
            if content[j] == "\\":
                j += 3 if content.startswith("\\\r\n", j) else 2
                continue
            found = PLACEHOLDER.match(content, j) if content[j] == "$" else None
            if found is None:
                j += 1
                continue
            if j > literal_start:
                pieces.append(quote + content[literal_start:j] + quote)
            pieces.append(f"__aai.t({self._name(token, found.group(1))})")
            literal_start = j = found.end()
        if not pieces:
            return token.text
        if literal_start < len(content):
            pieces.append(quote + content[literal_start:] + quote)
        text = pieces[0] if len(pieces) == 1 else "(" + " + ".join(pieces) + ")"
        previous, following = self._neighbour(i, -1), self._neighbour(i, 1)
        is_key = (
            previous is not None
            and previous.kind == PUNCT
            and previous.text in ("{", ",")
            and following is not None
            and following.text == ":"
        )
        return f"[{text}]" if is_key else text

    def _substitution(self, i: int) -> tuple[str | None, int]:
        """For the `${` ending token `i`: the parameter its expression names exactly, and where it ends."""
        j = i + 1
        while j < len(self.tokens) and self.tokens[j].kind in _TEMPLATE_EXPRESSION:
            j += 1
        if j == i + 1 or j == len(self.tokens) or self.tokens[j].kind not in (TEMPLATE_MIDDLE, TEMPLATE_TAIL):
            return None, j
        name = "".join(t.text for t in self.tokens[i + 1 : j])
        return (name, j) if name in self.known and PLACEHOLDER.fullmatch(f"${{{name}}}") else (None, j)

    def _neighbour(self, i: int, step: int) -> Token | None:
        j = i + step
        while 0 <= j < len(self.tokens):
            if self.tokens[j].kind not in INSIGNIFICANT:
                return self.tokens[j]
            j += step
        return None


def _error(source: str, token: Token, what: str) -> ScriptParseError:
    return ScriptParseError(f"JXA template at {position(source, token.start)}: {what}")
