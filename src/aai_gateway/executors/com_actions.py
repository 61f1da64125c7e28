"""The Windows action list (create, call, set, get, return), checked once and interpreted against COM objects.

Nothing is ever turned into source code: ProgIDs, member names and variable names are fixed by the
descriptor (an argument cannot choose them), and `${param}` placeholders in `args` and `value` become
call arguments and property values as data.

Names: `var` and `object` name variables of the script (bare names, e.g. "mail"); `${x}` always names
a tool argument. `return` gives either `value` (a template: a constant, `"${x}"` for an argument, or text
with placeholders) or `var` (a variable's value); it ends the script. The result (`last_result`) is the
value of the last create, call, get or return, None included; `set` produces none.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aai_gateway import templates
from aai_gateway.errors import AaiError, AaiJsonInvalid, AutomationFailed, InvalidParams
from aai_gateway.executors.com_errors import NoMember, Site, from_exception

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MEMBER = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
"""COM member names; a leading '_' would reach the Python wrapper's own attributes, not the app's."""

NOTES = frozenset({"action", "comment", "description"})
FIELDS: Mapping[str, tuple[frozenset[str], frozenset[str]]] = {
    "create": (frozenset({"var"}), frozenset({"progid"})),
    "call": (frozenset({"object", "method"}), frozenset({"var", "args"})),
    "set": (frozenset({"object", "property", "value"}), frozenset()),
    "get": (frozenset({"object", "property", "var"}), frozenset()),
    "return": (frozenset(), frozenset({"value", "var"})),
}
"""Each action's required and optional fields."""


@dataclass(frozen=True, slots=True)
class Action:
    index: int
    kind: str
    var: str | None = None
    object: str | None = None
    progid: str | None = None
    member: str | None = None
    """The method (call) or property (set, get)."""
    args: tuple[Any, ...] = ()
    value: Any = None

    @property
    def where(self) -> str:
        return f"script[{self.index}] ({self.kind})"


def plan(script: Any, default_progid: str | None) -> tuple[Action, ...]:
    """Check an action list and return its actions; raises AaiJsonInvalid naming the action at fault."""
    if not isinstance(script, list) or not script:
        raise AaiJsonInvalid("script must be a non-empty list of actions (create, call, set, get, return)")
    actions: list[Action] = []
    known: list[str] = []
    for index, raw in enumerate(script):
        if actions and actions[-1].kind == "return":
            raise AaiJsonInvalid(f"script[{index}] follows a return at script[{index - 1}] and would never run")
        action = _action(index, raw, default_progid, known)
        if action.var is not None and action.kind != "return" and action.var not in known:
            known.append(action.var)
        actions.append(action)
    return tuple(actions)


def _action(index: int, raw: Any, default_progid: str | None, known: list[str]) -> Action:
    where = f"script[{index}]"
    if not isinstance(raw, Mapping):
        raise AaiJsonInvalid(f"{where} must be an object with an `action`")
    kind = raw.get("action")
    if not isinstance(kind, str) or kind not in FIELDS:
        raise AaiJsonInvalid(f"{where}: action must be one of create, call, set, get, return; got {kind!r}")
    where = f"{where} ({kind})"
    required, optional = FIELDS[kind]
    unknown = sorted(set(raw) - required - optional - NOTES)
    if unknown:
        allowed = ", ".join(sorted(required | optional)) or "nothing else"
        raise AaiJsonInvalid(f"{where}: unknown field '{unknown[0]}'; {kind} takes {allowed}")
    missing = sorted(required - set(raw))
    if missing:
        raise AaiJsonInvalid(f"{where}: needs `{missing[0]}`")

    def name(key: str, pattern: re.Pattern[str], what: str) -> str | None:
        value = raw.get(key)
        if value is None and key not in required:
            return None
        if not isinstance(value, str) or not pattern.fullmatch(value):
            raise AaiJsonInvalid(f"{where}: `{key}` must be {what}; got {value!r}")
        return value

    var = name("var", NAME, "a variable name (letters, digits, '_')")
    obj = name("object", NAME, "a variable name (letters, digits, '_')")
    member = name("method", MEMBER, "a COM member name") or name("property", MEMBER, "a COM member name")
    for ref in (obj, var if kind == "return" else None):
        if ref is not None and ref not in known:
            raise AaiJsonInvalid(f"{where}: no variable '{ref}'; known: {', '.join(known) or 'none yet'}")
    progid = None
    if kind == "create":
        progid = raw.get("progid") or default_progid
        if not isinstance(progid, str) or not progid.strip():
            raise AaiJsonInvalid(f"{where}: needs a `progid` (or one on the windows platform)")
        if templates.names(progid):
            raise AaiJsonInvalid(f"{where}: the ProgID is fixed by the descriptor; it cannot come from an argument")
    args = raw.get("args", [])
    if not isinstance(args, list):
        raise AaiJsonInvalid(f"{where}: `args` must be a list")
    if kind == "return" and ("value" in raw) == ("var" in raw):
        raise AaiJsonInvalid(f"{where}: give either `value` (a template) or `var` (a variable), not both or neither")
    return Action(index, kind, var, obj, progid, member, tuple(args), raw.get("value"))


def run(
    actions: tuple[Action, ...],
    values: Mapping[str, Any],
    dispatch: Callable[[str], Any],
    com_error: type[BaseException],
) -> Any:
    """Interpret the actions with `values` as the arguments; returns last_result, raises an AaiError."""
    variables: dict[str, tuple[Any, str]] = {}
    """variable → (value, the ProgID it came from)."""
    result: Any = None
    for action in actions:
        origin = action.progid or ""
        target: Any = None
        if action.object is not None:
            target, origin = variables[action.object]
        site = Site(origin, action.where, action.object or "", action.member or "", len(action.args))
        try:
            if action.kind == "return":
                return variables[action.var][0] if action.var else _render(action.value, values, action)
            produced = True
            if action.kind == "create":
                assert action.progid is not None
                result = dispatch(action.progid)
            elif action.kind == "call":
                result = _call(target, action, _render(list(action.args), values, action))
            elif action.kind == "get":
                result = _member(target, action)
            else:
                value = _render(action.value, values, action)
                try:
                    setattr(target, action.member or "", value)
                except AttributeError as exc:
                    raise NoMember(str(exc)) from None
                produced = False
            if produced and action.var is not None:
                variables[action.var] = (result, origin)
        except AaiError:
            raise
        except Exception as exc:
            raise from_exception(exc, site, com_error) from None
    return result


def _member(target: Any, action: Action) -> Any:
    try:
        return getattr(target, action.member or "")
    except AttributeError as exc:
        raise NoMember(str(exc)) from None


def _call(target: Any, action: Action, args: list[Any]) -> Any:
    member = _member(target, action)
    if not callable(member):
        # pywin32's dynamic dispatch may hand back a method without parameters as its value already.
        if args:
            raise AutomationFailed(
                f"{action.where}: '{action.member}' is a property, not a method that takes arguments"
            )
        return member
    return member(*args)


def _render(template: Any, values: Mapping[str, Any], action: Action) -> Any:
    try:
        return templates.render(template, values)
    except templates.Missing as missing:
        raise InvalidParams(f"{action.where}: argument '{missing.name}' was not given and has no default") from None


def plain(value: Any, depth: int = 0) -> Any:
    """A COM value as JSON: SAFEARRAY tuples become lists, dates ISO text, bytes base64, objects a description."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if depth > 32:
        return repr(value)
    if isinstance(value, list | tuple):
        return [plain(v, depth + 1) for v in value]
    if isinstance(value, Mapping):
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):  # COM CURRENCY
        if not value.is_finite():
            return str(value)
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    return repr(value)
