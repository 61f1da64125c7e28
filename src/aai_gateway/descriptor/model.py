"""The one normalised descriptor model every shape (A, B, C) is turned into.

Executor-specific fields stay in `options` mappings with snake_case keys: a binding's options are
read only by the executor registered for its `automation`, so a new backend needs no change here.
The mappings are plain parsed JSON (jsonschema needs real dicts and lists); treat them as read-only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from aai_gateway import expressions

Shape = Literal["multi", "single", "camel"]

EVERYWHERE = ("web", "mcp")
"""Platforms whose bindings serve on every platform: a website, an MCP server."""


@dataclass(frozen=True, slots=True)
class Name:
    text: str
    lang: str | None = None
    """BCP-47 tag when the descriptor says it (shape C); pipe-separated names (shape B) carry none."""


HINTS = {
    "read_only": "readOnlyHint",
    "destructive": "destructiveHint",
    "idempotent": "idempotentHint",
    "open_world": "openWorldHint",
}
"""The MCP tool annotations a descriptor may give (`annotations.readOnlyHint`, ...), by field name."""


@dataclass(frozen=True, slots=True)
class Annotations:
    """What a tool says of its effects, as MCP's tool annotations do; None where the descriptor says nothing.

    They are hints from the descriptor's author: consent relies on `read_only` only where the user asks
    it to (`consent.readOnly`), and `destructive` only ever makes consent stricter.
    """

    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None

    @classmethod
    def from_json(cls, raw: Mapping[str, Any] | None) -> Annotations:
        raw = raw or {}
        return cls(**{name: raw.get(key) for name, key in HINTS.items()})

    def to_json(self) -> dict[str, bool]:
        """The hints given, under their MCP names."""
        given = {key: getattr(self, name) for name, key in HINTS.items()}
        return {key: value for key, value in given.items() if value is not None}


@dataclass(frozen=True, slots=True)
class UndoRead:
    """A read-only call run just before a step, whose result the undo's arguments may use (`before`)."""

    tool: str
    args: Mapping[str, Any] = field(default_factory=dict)
    """A template whose `${…}` queries read `{"args": the step's arguments}`."""

    def arguments(self, step_args: Mapping[str, Any]) -> dict[str, Any]:
        """The read's arguments for a step called with `step_args` (ExpressionError when a query fails)."""
        return _rendered(self.args, {"args": step_args})

    def to_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "args": _plain(self.args)}


@dataclass(frozen=True, slots=True)
class Undo:
    """How a plan undoes a step that used this tool: another tool of the same binding and its arguments."""

    tool: str
    args: Mapping[str, Any] = field(default_factory=dict)
    """A template whose `${…}` queries read `{"args", "result", "before"}`: the step's arguments, its result
    and the result of the `before` read."""
    before: UndoRead | None = None

    @classmethod
    def from_json(cls, raw: Mapping[str, Any] | None) -> Undo | None:
        if not isinstance(raw, Mapping):
            return None
        before = raw.get("before")
        read = UndoRead(str(before["tool"]), before.get("args") or {}) if isinstance(before, Mapping) else None
        return cls(str(raw["tool"]), raw.get("args") or {}, read)

    def arguments(self, step_args: Mapping[str, Any], result: Any, before: Any = None) -> dict[str, Any]:
        """The undo tool's arguments for a step called with `step_args` that gave `result`, `before` being
        what the before read gave (ExpressionError when a query fails)."""
        return _rendered(self.args, {"args": step_args, "result": result, "before": before})

    def to_json(self) -> dict[str, Any]:
        given = {"tool": self.tool, "args": _plain(self.args)}
        return given | ({"before": self.before.to_json()} if self.before else {})


EVENT_KINDS = ("dbus", "poll", "mcp")
"""The keys an event names its source by."""


@dataclass(frozen=True, slots=True)
class Event:
    """Something the app announces that an agent can wait for: a DBus signal, a poll of a read-only tool, or
    an MCP server's notification.

    `source` is the descriptor's `dbus`, `poll` or `mcp` object as written, read only by the event source of
    that `kind` (see `aai_gateway.events`)."""

    name: str
    description: str
    kind: str
    """`dbus`, `poll` or `mcp`: the source that notices it."""
    source: Mapping[str, Any] = field(default_factory=dict)
    when: str | None = None
    """A JMESPath query over the payload: a signal counts only when true; a poll fires when it turns true."""
    payload: Any = None
    """A template whose `${…}` queries read the raw payload, giving what waiters receive; None keeps it whole."""

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Event:
        kind = next((k for k in EVENT_KINDS if k in raw), "poll")
        return cls(
            str(raw["name"]), str(raw.get("description", "")), kind, raw[kind], raw.get("when"), raw.get("payload")
        )

    def to_json(self) -> dict[str, Any]:
        given = {"name": self.name, "description": self.description, self.kind: _plain(self.source)}
        return (
            given
            | ({"when": self.when} if self.when else {})
            | ({"payload": _plain(self.payload)} if self.payload is not None else {})
        )


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    parameters: Mapping[str, Any]
    returns: Mapping[str, Any] | None = None
    timeout: float | None = None
    """Seconds; None means the app's or the gateway's default."""
    options: Mapping[str, Any] = field(default_factory=dict)
    annotations: Annotations = field(default_factory=Annotations)
    aliases: tuple[str, ...] = ()
    """Other words for the operation, in any language, that search matches (never shown in the guide)."""
    undo: Undo | None = None
    """How a plan undoes a step that used this tool; None where the descriptor says nothing."""

    @property
    def read_only(self) -> bool:
        return self.annotations.read_only is True

    @property
    def destructive(self) -> bool:
        """Marked destructive (`destructiveHint: true`); only what the descriptor says, not MCP's default."""
        return self.annotations.destructive is True


@dataclass(frozen=True, slots=True)
class Binding:
    platform: str
    automation: str
    tools: tuple[Tool, ...]
    options: Mapping[str, Any] = field(default_factory=dict)
    auth: Mapping[str, Any] | None = None
    _by_name: dict[str, Tool] = field(init=False, repr=False, compare=False)
    """Each tool by its name (the first of a name, as a search in order finds it): a call looks its tool up."""

    def __post_init__(self) -> None:
        by_name: dict[str, Tool] = {}
        for tool in self.tools:
            by_name.setdefault(tool.name, tool)
        object.__setattr__(self, "_by_name", by_name)

    def tool(self, name: str) -> Tool | None:
        return self._by_name.get(name)


@dataclass(frozen=True, slots=True)
class Descriptor:
    app_id: str
    names: tuple[Name, ...]
    description: str
    bindings: Mapping[str, Binding]
    shape: Shape
    aliases: tuple[str, ...] = ()
    version: str | None = None
    source: str = ""
    events: tuple[Event, ...] = ()
    """What the app announces that an agent can wait for (`aai_wait`)."""
    document: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The descriptor as written (what `resources/read` returns)."""

    @property
    def name(self) -> str:
        return self.names[0].text if self.names else self.app_id

    def served(self, platform: str) -> tuple[Binding, ...]:
        """The bindings a gateway on `platform` serves: the platform's own, then `web` and `mcp`, which
        serve on every platform."""
        return tuple(self.bindings[p] for p in (platform, *EVERYWHERE) if p in self.bindings)

    @property
    def mcp(self) -> Binding | None:
        """The binding of an MCP server served as this app, whose tools are the server's own."""
        return self.bindings.get("mcp")

    def find_tool(self, platform: str, name: str) -> tuple[Binding, Tool] | None:
        for binding in self.served(platform):
            tool = binding.tool(name)
            if tool is not None:
                return binding, tool
        return None

    def tools(self, platform: str) -> list[tuple[Binding, Tool]]:
        """Every served tool once; the platform's own binding wins over `web` for a shared name."""
        seen: set[str] = set()
        found = []
        for binding in self.served(platform):
            for tool in binding.tools:
                if tool.name not in seen:
                    seen.add(tool.name)
                    found.append((binding, tool))
        return found

    def event(self, name: str) -> Event | None:
        return next((e for e in self.events if e.name == name), None)

    def to_json(self) -> dict[str, Any]:
        """A plain, stable JSON form of the model (golden files, `resources/read`)."""
        events = {"events": [e.to_json() for e in self.events]} if self.events else {}
        return events | {
            "appId": self.app_id,
            "shape": self.shape,
            "names": [{"text": n.text, "lang": n.lang} for n in self.names],
            "description": self.description,
            "aliases": list(self.aliases),
            "version": self.version,
            "bindings": {
                p: {
                    "automation": b.automation,
                    "options": _plain(b.options),
                    "auth": _plain(b.auth),
                    "tools": [
                        {
                            "name": t.name,
                            "description": t.description,
                            "parameters": _plain(t.parameters),
                            "returns": _plain(t.returns),
                            "timeout": t.timeout,
                            "options": _plain(t.options),
                            "annotations": t.annotations.to_json(),
                        }
                        | ({"aliases": list(t.aliases)} if t.aliases else {})
                        | ({"undo": t.undo.to_json()} if t.undo else {})
                        for t in b.tools
                    ],
                }
                for p, b in self.bindings.items()
            },
        }


def _rendered(template: Mapping[str, Any], context: Mapping[str, Any]) -> dict[str, Any]:
    """`template` rendered over `context`, leaving out an argument whose query found nothing (null), so that
    `${args.player}` passes on an optional argument only when the step was given it."""
    values = expressions.render(dict(template), context, "undo.args")
    return {key: value for key, value in values.items() if value is not None}


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
