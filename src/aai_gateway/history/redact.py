"""Secrets out of what the history keeps: arguments, result excerpts and error details.

A value is hidden when its key looks secret (password, token, api_key, cookie, …, any case and
spelling) or when the JSON Schema describing it marks it `"x-sensitive": true` or
`"format": "password"`, at any depth. Known secret values (the config's client secrets and API keys,
and every secret `secret_forms.remember`s, such as an MCP server's) are also cut out of any text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from aai_gateway.descriptor.safe_schema import matches
from aai_gateway.memo import PerObject
from aai_gateway.secret_forms import MIN_LENGTH, REDACTED, all_forms, cut, remembered
from aai_gateway.text import printable

MASK = REDACTED
SECRET_PARTS = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "authorization",
    "cookie",
    "credential",
    "privatekey",
    "accesskey",
    "sessionid",
)
SECRET_KEYS = frozenset({"auth", "pass", "pwd"})
MAX_STRING = 1000
"""Longer strings are shortened in what is kept: the history is a record, not a copy of the data."""
MAX_REF_DEPTH = 16

Schemas = tuple[Mapping[str, Any], ...]


@lru_cache(maxsize=4096, typed=True)  # the same few argument names come back on every call
def secret_key(key: object) -> bool:
    flat = re.sub(r"[^a-z0-9]", "", str(key).lower())
    return flat in SECRET_KEYS or any(part in flat for part in SECRET_PARTS)


def sensitive(schema: Mapping[str, Any]) -> bool:
    return schema.get("x-sensitive") is True or schema.get("format") == "password"


class Redactor:
    """Redacts JSON values against an optional schema, and known secret strings out of any text."""

    def __init__(self, secrets: Iterable[str] = (), max_string: int = MAX_STRING) -> None:
        self._given = [s for s in secrets if len(s) >= MIN_LENGTH]  # very short ones would mask noise
        # Every form each one travels in (percent-encoded, JSON-escaped, …), longest first.
        self._secrets = all_forms(self._given)
        self._known: tuple[str, ...] = ()
        self._forms = self._secrets
        self.max_string = max_string

    def value(
        self,
        value: Any,
        schema: Mapping[str, Any] | None = None,
        max_string: int | None = None,
        hidden: list[str] | None = None,
    ) -> Any:
        """A copy of `value` with secret fields masked and strings longer than `max_string` shortened;
        the strings masked are added to `hidden`, if given."""
        root = schema if isinstance(schema, Mapping) else _NO_SCHEMA
        limit = self.max_string if max_string is None else max_string
        return self._walk(value, _PLANS.top(root), root, limit, [] if hidden is None else hidden)

    def also(self, secrets: Iterable[str]) -> Redactor:
        """This redactor with more secrets to cut out of text (a call's masked argument values)."""
        return Redactor([*self._given, *secrets], self.max_string)

    def text(self, text: str) -> str:
        known = remembered()
        if known is not self._known:  # a secret was resolved since: cut it too, longest form first
            self._known = known
            self._forms = sorted({*self._secrets, *known}, key=len, reverse=True)
        return cut(printable(text), self._forms) if self._forms else printable(text)

    def _walk(self, value: Any, schemas: Schemas, root: Mapping[str, Any], limit: int, hidden: list[str]) -> Any:
        kind = type(value)
        if kind is str:
            return shorten(self.text(value), limit)
        if kind in _PLAIN:  # the exact types first: the same answers as the checks below, without the ABCs
            return value
        if kind is dict or (kind is not list and kind is not tuple and isinstance(value, Mapping)):
            out: dict[str, Any] = {}
            for key, item in value.items():
                below, secret = _PLANS.below(schemas, root, key)
                name = key if type(key) is str and key.isascii() else printable(str(key))
                out[name] = _mask(item, hidden) if secret else self._walk(item, below, root, limit, hidden)
            return out
        if isinstance(value, list | tuple):
            items = []
            for index, item in enumerate(value):
                below, secret = _PLANS.below(schemas, root, index, item=True)
                items.append(_mask(item, hidden) if secret else self._walk(item, below, root, limit, hidden))
            return items
        if isinstance(value, str):
            return shorten(self.text(value), limit)
        return value


_PLAIN = frozenset({int, float, bool, type(None)})
_NO_SCHEMA: Mapping[str, Any] = {}


class _Plans:
    """The schemas below each key of each schema seen, and whether they mark it secret: worked out once,
    as the same few tools are called again and again."""

    def __init__(self) -> None:
        self._tops: PerObject[Schemas] = PerObject()
        self._below: PerObject[tuple[Schemas, bool]] = PerObject()

    def top(self, root: Mapping[str, Any]) -> Schemas:
        found = self._tops.get(root)
        return found if found is not None else self._tops.put(root, _expand((root,), root))

    def below(
        self, schemas: Schemas, root: Mapping[str, Any], key: object, *, item: bool = False
    ) -> tuple[Schemas, bool]:
        """The schemas below `key` of an object (or index `key` of an array, with `item`), and whether secret."""
        if not schemas:  # below a key no schema describes: nothing, and secret by its name alone
            return (), (not item and secret_key(key))
        detail = (item, type(key), key)  # the type too: 1 and True are the same dict key
        found = self._below.get(schemas, detail)
        if found is not None:
            return found
        if item:
            assert isinstance(key, int)
            below = _expand(_item(schemas, key), root)
            secret = any(sensitive(s) for s in below)
        else:
            below = _expand(_property(schemas, str(key)), root)
            secret = secret_key(key) or any(sensitive(s) for s in below)
        return self._below.put(schemas, (below, secret), detail)


_PLANS = _Plans()


def _mask(value: Any, hidden: list[str]) -> str:
    if isinstance(value, str):
        hidden.append(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            _mask(item, hidden)
    elif isinstance(value, list | tuple):
        for item in value:
            _mask(item, hidden)
    return MASK


def shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…(+{len(text) - limit} characters)"


def _expand(schemas: Iterable[Any], root: Mapping[str, Any], depth: int = 0) -> Schemas:
    """The schemas themselves plus every branch of allOf/anyOf/oneOf and local $refs they lead to."""
    found: list[Mapping[str, Any]] = []
    for schema in schemas:
        if not isinstance(schema, Mapping):
            continue
        found.append(schema)
        if depth >= MAX_REF_DEPTH:
            continue
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = _resolve(ref, root)
            if target is not None:
                found.extend(_expand((target,), root, depth + 1))
        for keyword in ("allOf", "anyOf", "oneOf"):
            branches = schema.get(keyword)
            if isinstance(branches, list):
                found.extend(_expand(branches, root, depth + 1))
    return tuple(found)


def _resolve(ref: str, root: Mapping[str, Any]) -> Mapping[str, Any] | None:
    if not ref.startswith("#"):
        return None
    node: Any = root
    for raw in ref[1:].split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, Mapping) else None


def _property(schemas: Schemas, key: str) -> list[Any]:
    below: list[Any] = []
    for schema in schemas:
        properties = schema.get("properties")
        named = isinstance(properties, Mapping) and key in properties
        if named:
            assert isinstance(properties, Mapping)
            below.append(properties[key])
        patterns = schema.get("patternProperties")
        if isinstance(patterns, Mapping):
            below.extend(s for p, s in patterns.items() if _matches(p, key))
        extra = schema.get("additionalProperties")
        if not named and isinstance(extra, Mapping):
            below.append(extra)
    return below


def _item(schemas: Schemas, index: int) -> list[Any]:
    below: list[Any] = []
    for schema in schemas:
        items = schema.get("items")
        positional = schema.get("prefixItems", items if isinstance(items, list) else None)
        if isinstance(positional, Sequence) and not isinstance(positional, str):
            if index < len(positional):
                below.append(positional[index])
            else:
                extra = schema.get("additionalItems", items if "prefixItems" in schema else None)
                below.append(extra)
        elif isinstance(items, Mapping):
            below.append(items)
    return below


def _matches(pattern: str, key: str) -> bool:
    """Whether a `patternProperties` pattern names `key`; one the gateway cannot run names it (more is masked)."""
    found = matches(pattern, key)
    return True if found is None else found
