"""AppleScript templates rewritten so that `${param}` values arrive as data, never as source.

`prepare(template, schema)` runs once per tool (callers cache it) and depends on the template and the
schema only. The script it returns reads every value from `on run argv`; `Prepared.argv(args)` gives
the values for `osascript - <argv…>`. Where a placeholder sits decides what it becomes:

- inside a text literal: a text variable; `"${s}"` → `|aai_text_s|` and
  `"Re: ${s}!"` → `("Re: " & |aai_text_s| & "!")`, the literal's pieces kept exactly as written.
  The value's text is the string itself, JSON for other values, "" for null.
- in code: the value itself, `${n}` → `|aai_value_n|`, rebuilt from argv by a generated decoder
  (integer, real, boolean, text, list, `missing value` for null; an object arrives as its JSON text,
  since AppleScript cannot build a record with arbitrary keys without compiling code).
- in a comment: left alone. In a «raw code» or |identifier|, in a `use` statement or a property's
  initial value: a `ScriptParseError`, as those are fixed when the script compiles.

The template runs as the implicit run handler of a script object, so its handlers, properties and
explicit `on run` keep working; a top-level `global` makes the variables visible inside it. The
template's text is not re-indented (that would change multi-line literals); leading `use`
statements move to the top of the script, where AppleScript requires them.

argv layout: one item per text variable, in order; then each value as a kind tag and its text:
`s` text, `i` integer, `r` real, `b` boolean ("true"/"false"), `n` null (no text), `j` object as
JSON, `l` list (its item count, then each item the same way).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from aai_gateway.errors import InvalidParams, ScriptParseError
from aai_gateway.executors.applescript_tokens import Lines, Token, tokenize
from aai_gateway.templates import PLACEHOLDER

SlotKind = Literal["text", "value"]

INTEGER_RANGE = (-(2**29), 2**29 - 1)
"""AppleScript integers; larger whole numbers travel as reals, as AppleScript itself would make them."""

SCRIPT_OBJECT = "aai_template"

_RESERVED = re.compile(r"(?<![A-Za-z0-9_])aai_", re.IGNORECASE)
_IN_LITERAL = re.compile(r"\\.|" + PLACEHOLDER.pattern, re.DOTALL)
_CURLY = re.compile("[“”]")
_USE = re.compile(r"use\b", re.IGNORECASE)
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_PROPERTY = re.compile(r"[ \t]*(?:property|prop)\b", re.IGNORECASE)

DECODER = """\
on aai_decode(argv, aai_at)
\t-- one value starting at item aai_at: its kind tag, then its text; returns {value, next position}
\tset aai_kind to item aai_at of argv
\tif aai_kind is "n" then return {missing value, aai_at + 1}
\tset aai_text to item (aai_at + 1) of argv
\tif aai_kind is "s" or aai_kind is "j" then return {aai_text, aai_at + 2}
\tif aai_kind is "i" then return {aai_text as integer, aai_at + 2}
\tif aai_kind is "r" then return {aai_real(aai_text), aai_at + 2}
\tif aai_kind is "b" then return {aai_text is "true", aai_at + 2}
\t-- "l": the number of items, then each item
\tset aai_items to {}
\tset aai_at to aai_at + 2
\trepeat (aai_text as integer) times
\t\tset {aai_item, aai_at} to aai_decode(argv, aai_at)
\t\tset end of aai_items to aai_item
\tend repeat
\treturn {aai_items, aai_at}
end aai_decode

on aai_real(aai_text)
\t-- reals arrive as "1.5E+12"; text to real follows the user's decimal separator
\tset aai_point to character 2 of (0.5 as text)
\tif aai_point is "." then return aai_text as real
\tset aai_saved to AppleScript's text item delimiters
\tset AppleScript's text item delimiters to "."
\tset aai_parts to text items of aai_text
\tset AppleScript's text item delimiters to aai_point
\tset aai_text to aai_parts as text
\tset AppleScript's text item delimiters to aai_saved
\treturn aai_text as real
end aai_real
"""


@dataclass(frozen=True, slots=True)
class Slot:
    """One variable of the generated script: a text slot takes one argv item, a value slot a tagged run."""

    name: str
    kind: SlotKind
    variable: str
    default: Any = field(default=None, hash=False)


@dataclass(frozen=True, slots=True)
class Prepared:
    source: str
    slots: tuple[Slot, ...]

    def argv(self, args: Mapping[str, Any]) -> list[str]:
        """The values for `osascript - …`, in slot order; absent arguments take the slot's default."""
        out: list[str] = []
        for slot in self.slots:
            value = args.get(slot.name, slot.default)
            items = [text_of(value)] if slot.kind == "text" else encode(value, slot.name)
            for item in items:
                _check(item, slot.name)
            out.extend(items)
        return out


def prepare(template: str, parameters: Mapping[str, Any]) -> Prepared:
    """Rewrite `template` for the tool whose JSON Schema is `parameters`; pure, so cache the result."""
    return _Rewrite(template, parameters).prepared()


def text_of(value: Any) -> str:
    """A value as it reads inside text: the string itself, "" for null, JSON for anything else."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def encode(value: Any, name: str) -> list[str]:
    """A value as tagged argv items (see the module's argv layout)."""
    if value is None:
        return ["n"]
    if isinstance(value, bool):
        return ["b", "true" if value else "false"]
    if isinstance(value, int):
        low, high = INTEGER_RANGE
        if low <= value <= high:
            return ["i", str(value)]
        try:
            return ["r", real_text(float(value))]
        except OverflowError:
            raise InvalidParams(f"argument '{name}' is too large a number for AppleScript") from None
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidParams(f"argument '{name}' must be a finite number")
        return ["r", real_text(value)]
    if isinstance(value, str):
        return ["s", value]
    if isinstance(value, list | tuple):
        items = ["l", str(len(value))]
        for index, item in enumerate(value):
            items.extend(encode(item, f"{name}[{index}]"))
        return items
    if isinstance(value, Mapping):
        try:
            return ["j", json.dumps(value, ensure_ascii=False, allow_nan=False)]
        except (TypeError, ValueError) as e:
            raise InvalidParams(f"argument '{name}' is not a JSON object: {e}") from None
    raise InvalidParams(f"argument '{name}' is not a JSON value ({type(value).__name__})")


def real_text(value: float) -> str:
    """A real the way AppleScript writes one: `0.5`, `1.0E+16`, `-2.5E-7`."""
    text = repr(value)
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    if "." not in mantissa:
        mantissa += ".0"
    power = int(exponent)
    return f"{mantissa}E{'+' if power >= 0 else '-'}{abs(power)}"


def _check(item: str, name: str) -> None:
    if "\x00" in item:
        raise InvalidParams(f"argument '{name}' contains a NUL character, which cannot be passed to AppleScript")
    try:
        item.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidParams(f"argument '{name}' contains an unpaired surrogate, which is not valid text") from None


class _Rewrite:
    def __init__(self, template: str, parameters: Mapping[str, Any]) -> None:
        self.template = template
        self.lines = Lines(template)
        properties = parameters.get("properties")
        self.properties: Mapping[str, Any] = properties if isinstance(properties, Mapping) else {}
        self.variables: dict[tuple[SlotKind, str], str] = {}
        self.taken: set[str] = set()

    def prepared(self) -> Prepared:
        tokens = tokenize(self.template)
        for token in tokens:
            self._refuse_reserved(token)
        prologue_end = _prologue_end(tokens)
        body: list[str] = []
        for token in tokens:
            if token.end <= prologue_end:
                self._refuse_placeholders(token, "inside a use statement, which is fixed when the script compiles")
            elif token.start < prologue_end:
                head = self.template[token.start : prologue_end]
                self._refuse_placeholders(
                    token, "inside a use statement, which is fixed when the script compiles", head
                )
                body.append(self._rewrite(token, prologue_end))
            else:
                body.append(self._rewrite(token, token.start))
        slots = tuple(
            Slot(name, kind, variable, self._default(name))
            for wanted in ("text", "value")
            for (kind, name), variable in self.variables.items()
            if kind == wanted
        )
        return Prepared(_assemble(self.template[:prologue_end], "".join(body), slots), slots)

    def _rewrite(self, token: Token, start: int) -> str:
        text = self.template[start : token.end]
        if token.kind == "comment":
            return text
        if token.kind in ("chevron", "pipe"):
            what = "«raw code»" if token.kind == "chevron" else "|identifier|"
            self._refuse_placeholders(token, f"inside a {what}, which is part of the script's code")
            return text
        if token.kind == "string":
            return self._literal(token)
        curly = _CURLY.search(text)
        if curly:
            raise ScriptParseError(
                f"curly quote {curly.group()} at {self.lines.where(start + curly.start())} outside a text literal; "
                "write straight quotes (\") so that the literal's bounds are unambiguous"
            )
        return PLACEHOLDER.sub(lambda m: self._variable("value", m.group(1), start + m.start()), text)

    def _literal(self, token: Token) -> str:
        inner = token.text[1:-1]
        pieces: list[str] = []
        last = 0
        for found in _IN_LITERAL.finditer(inner):
            if found.group(1) is None:  # an escape such as \" or \\
                continue
            if found.start() > last:
                pieces.append(f'"{inner[last : found.start()]}"')
            pieces.append(self._variable("text", found.group(1), token.start + 1 + found.start(), token.start))
            last = found.end()
        if not pieces:
            return token.text
        if last < len(inner):
            pieces.append(f'"{inner[last:]}"')
        return pieces[0] if len(pieces) == 1 else "(" + " & ".join(pieces) + ")"

    def _variable(self, kind: SlotKind, name: str, offset: int, statement: int | None = None) -> str:
        """The variable for a placeholder at `offset`; `statement` is where its line begins to be read
        (a text literal's opening quote, since a literal may span lines)."""
        where = self.lines.where(offset)
        if name not in self.properties:
            known = ", ".join(sorted(self.properties)) or "(none)"
            raise ScriptParseError(
                f"the placeholder ${{{name}}} at {where} is not a parameter of this tool; parameters are: {known}"
            )
        at = offset if statement is None else statement
        line_start = max(self.template.rfind("\n", 0, at), self.template.rfind("\r", 0, at)) + 1
        if _PROPERTY.match(self.template, line_start):
            raise ScriptParseError(
                f"the placeholder ${{{name}}} at {where} is in a property's initial value, which is fixed when the "
                "script compiles; set the property in the script's body instead"
            )
        variable = self.variables.get((kind, name))
        if variable is None:
            base = f"aai_{kind}_{name}"
            candidate, number = base, 2
            while candidate.lower() in self.taken:  # AppleScript identifiers ignore case
                candidate, number = f"{base}_{number}", number + 1
            self.taken.add(candidate.lower())
            variable = self.variables[(kind, name)] = f"|{candidate}|"
        return variable

    def _default(self, name: str) -> Any:
        schema = self.properties.get(name)
        return schema.get("default") if isinstance(schema, Mapping) else None

    def _refuse_reserved(self, token: Token) -> None:
        if token.kind not in ("code", "pipe"):
            return
        found = _RESERVED.search(token.text)
        if found:
            where = self.lines.where(token.start + found.start())
            raise ScriptParseError(
                f"the template uses a name starting with {found.group()!r} at {where}; "
                "names starting with aai_ are reserved for the gateway's generated code"
            )

    def _refuse_placeholders(self, token: Token, why: str, text: str | None = None) -> None:
        if token.kind == "comment":
            return
        found = PLACEHOLDER.search(token.text if text is None else text)
        if found:
            where = self.lines.where(token.start + found.start())
            raise ScriptParseError(f"the placeholder {found.group()} at {where} is {why}")


def _prologue_end(tokens: list[Token]) -> int:
    """Where the template's leading `use` statements (and the comments among them) end; 0 if it has none."""
    end, in_use = 0, False
    for token in tokens:
        if token.kind == "comment" or (in_use and token.kind != "code"):
            continue
        if token.kind != "code":
            return end
        text, position = token.text, 0
        while position < len(text):
            if in_use:
                stop = _statement_end(text, position)
                if stop < 0:
                    break
                in_use, position, end = False, stop, token.start + stop
                continue
            position = _skip_space(text, position)
            if _USE.match(text, position):
                in_use, position = True, position + len("use")
            elif position < len(text):
                return end
    return tokens[-1].end if in_use else end


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


def _statement_end(text: str, position: int) -> int:
    """The offset just past the line break that ends a statement (one not continued by ¬), or -1."""
    for found in _LINE_BREAK.finditer(text, position):
        if not text[position : found.start()].rstrip(" \t").endswith("¬"):
            return found.end()
    return -1


def _assemble(prologue: str, body: str, slots: tuple[Slot, ...]) -> str:
    lines: list[str] = []
    if prologue:
        lines.append(prologue if prologue.endswith(("\n", "\r")) else prologue + "\n")
    if slots:
        lines.append("global " + ", ".join(slot.variable for slot in slots) + "\n\n")
    lines.append("on run argv\n" if slots else "on run\n")
    texts = [slot for slot in slots if slot.kind == "text"]
    values = [slot for slot in slots if slot.kind == "value"]
    lines.extend(f"\tset {slot.variable} to item {index} of argv\n" for index, slot in enumerate(texts, 1))
    if values:
        lines.append(f"\tset aai_next to {len(texts) + 1}\n")
        lines.extend(f"\tset {{{slot.variable}, aai_next}} to aai_decode(argv, aai_next)\n" for slot in values)
    lines.append(f"\treturn run {SCRIPT_OBJECT}\nend run\n\n")
    if values:
        lines.append(DECODER + "\n")
    ending = "" if not body or body.endswith(("\n", "\r")) else "\n"
    lines.append(f"script {SCRIPT_OBJECT}\n{body}{ending}end script\n")
    return "".join(lines)
