"""JSON values ↔ DBus values, driven by the method's signature.

Pure functions over values (no bus), so that every type rule is table-tested. A value that does not
fit its DBus type is an `InvalidParams` naming the argument, raised before anything is sent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from dbus_fast import SignatureTree, SignatureType, Variant

from aai_gateway.errors import InvalidParams

INT_RANGES: Mapping[str, tuple[int, int]] = {
    "y": (0, 2**8 - 1),
    "n": (-(2**15), 2**15 - 1),
    "q": (0, 2**16 - 1),
    "i": (-(2**31), 2**31 - 1),
    "u": (0, 2**32 - 1),
    "x": (-(2**63), 2**63 - 1),
    "t": (0, 2**64 - 1),
}

TYPE_WORDS: Mapping[str, str] = {
    "y": "a byte (0..255)",
    "n": "a 16-bit integer",
    "q": "an unsigned 16-bit integer",
    "i": "a 32-bit integer",
    "u": "an unsigned 32-bit integer",
    "x": "a 64-bit integer",
    "t": "an unsigned 64-bit integer",
    "d": "a number",
    "b": "a boolean",
    "s": "a string",
    "o": "a DBus object path",
    "g": "a DBus signature",
}

JSON_SCHEMA_SIGNATURES: Mapping[str, str] = {
    "string": "s",
    "integer": "x",
    "number": "d",
    "boolean": "b",
    "object": "a{sv}",
}


def signature_types(signature: str) -> list[SignatureType]:
    return list(SignatureTree(signature).types)


def guess_signature(schema: Mapping[str, Any]) -> str:
    """A signature from a JSON Schema, for services that cannot be introspected."""
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        return "a" + (guess_signature(items) if isinstance(items, Mapping) else "v")
    if isinstance(kind, str):
        return JSON_SCHEMA_SIGNATURES.get(kind, "v")
    return "v"


def to_dbus(value: Any, sig: SignatureType, where: str, schema: Any = None) -> Any:
    """Convert a JSON value for one DBus type; `where` names the argument in errors.

    `schema` is the value's JSON Schema, followed into arrays and objects: a `signature` keyword in
    it fixes the type of a variant that the JSON value alone cannot tell (a byte, say, or `u`).
    """
    token = sig.token
    if token in INT_RANGES:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise _mismatch(where, token, value)
        low, high = INT_RANGES[token]
        if not low <= value <= high:
            raise InvalidParams(f"argument '{where}' must be {TYPE_WORDS[token]} ({low}..{high}); got {value}")
        return value
    if token == "d":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _mismatch(where, token, value)
        if not math.isfinite(value):
            raise InvalidParams(f"argument '{where}' must be a finite number; got {value}")
        return float(value)
    if token == "b":
        if not isinstance(value, bool):
            raise _mismatch(where, token, value)
        return value
    if token in "sog":
        if not isinstance(value, str):
            raise _mismatch(where, token, value)
        if "\x00" in value:
            raise InvalidParams(f"argument '{where}' contains a NUL character, which DBus strings cannot carry")
        return value
    if token == "h":
        raise InvalidParams(f"argument '{where}' is a Unix file descriptor (DBus 'h'), which the gateway cannot pass")
    if token == "v":
        return _variant(value, where, schema)
    if token == "a":
        return _array(value, sig, where, schema)
    if token == "(":
        if not isinstance(value, list) or len(value) != len(sig.children):
            raise InvalidParams(
                f"argument '{where}' must be an array of {len(sig.children)} items (DBus struct {sig.signature})"
            )
        return [
            to_dbus(v, c, f"{where}[{i}]", _item(schema, i))
            for i, (v, c) in enumerate(zip(value, sig.children, strict=True))
        ]
    raise InvalidParams(f"argument '{where}' has DBus type '{sig.signature}', which the gateway cannot send")


def _item(schema: Any, index: int | None = None) -> Any:
    if not isinstance(schema, dict):
        return None
    items = schema.get("items")
    if isinstance(items, list):
        return items[index] if index is not None and index < len(items) else None
    return items


def _field(schema: Any, key: str) -> Any:
    if not isinstance(schema, dict):
        return None
    props = schema.get("properties")
    if isinstance(props, dict) and key in props:
        return props[key]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def _array(value: Any, sig: SignatureType, where: str, schema: Any = None) -> Any:
    child = sig.children[0]
    if child.token == "{":
        if not isinstance(value, dict):
            raise InvalidParams(f"argument '{where}' must be an object (DBus dict {sig.signature})")
        key_sig, value_sig = child.children
        return {
            _dict_key(k, key_sig, f"{where}.{k}"): to_dbus(v, value_sig, f"{where}.{k}", _field(schema, str(k)))
            for k, v in value.items()
        }
    if child.token == "y" and isinstance(value, str):
        return value.encode("utf-8")
    if not isinstance(value, list):
        raise InvalidParams(f"argument '{where}' must be an array (DBus {sig.signature}), got {_kind(value)}")
    items = [to_dbus(v, child, f"{where}[{i}]", _item(schema, i)) for i, v in enumerate(value)]
    return bytes(items) if child.token == "y" else items


def _dict_key(key: str, sig: SignatureType, where: str) -> Any:
    if sig.token in INT_RANGES:
        try:
            return to_dbus(int(key), sig, where)
        except ValueError:
            raise InvalidParams(f"argument '{where}': key must be an integer") from None
    return to_dbus(key, sig, where)


def _variant(value: Any, where: str, schema: Any = None) -> Variant:
    declared = schema.get("signature") if isinstance(schema, dict) else None
    if isinstance(declared, str):
        try:
            [sig] = signature_types(declared)
        except Exception:
            raise InvalidParams(f"argument '{where}': '{declared}' is not a single DBus signature") from None
        return Variant(declared, to_dbus(value, sig, where, schema))
    if isinstance(value, bool):
        return Variant("b", value)
    if isinstance(value, int):
        return Variant("i" if -(2**31) <= value < 2**31 else "x", to_dbus(value, SignatureType("x"), where))
    if isinstance(value, float):
        return Variant("d", to_dbus(value, SignatureType("d"), where))
    if isinstance(value, str):
        return Variant("s", to_dbus(value, SignatureType("s"), where))
    if isinstance(value, list):
        if value and all(isinstance(v, str) for v in value):
            return Variant("as", value)
        return Variant("av", [_variant(v, f"{where}[{i}]", _item(schema, i)) for i, v in enumerate(value)])
    if isinstance(value, dict):
        return Variant("a{sv}", {str(k): _variant(v, f"{where}.{k}", _field(schema, str(k))) for k, v in value.items()})
    raise InvalidParams(f"argument '{where}' is null, which DBus cannot carry")


def from_dbus(value: Any) -> Any:
    """A DBus reply value as JSON: variants unwrapped, bytes as a list of numbers, tuples as arrays."""
    if isinstance(value, Variant):
        return from_dbus(value.value)
    if isinstance(value, bytes | bytearray):
        return list(value)
    if isinstance(value, list | tuple):
        return [from_dbus(v) for v in value]
    if isinstance(value, dict):
        return {str(k): from_dbus(v) for k, v in value.items()}
    return value


def _mismatch(where: str, token: str, value: Any) -> InvalidParams:
    return InvalidParams(f"argument '{where}' must be {TYPE_WORDS[token]}; got {_kind(value)}")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({value})"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"
