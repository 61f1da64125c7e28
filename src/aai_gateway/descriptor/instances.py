"""One DBus descriptor for every running instance of an interface, such as any MPRIS media player.

A DBus binding whose `service` ends in `.*` (`org.mpris.MediaPlayer2.*`) matches every bus name that
starts with the part before the `*`. Its `instance` block says how a call picks one:

- `argument`: the name of an optional argument the gateway adds to every tool of the binding
  (`player`). Its value is matched against the end of the bus name after the prefix (`vlc`, also
  `vlc.instance1234`) and, when `label` is given, against that property (`VLC media player`), in
  either case ignoring case;
- `label`: `{interface, property}`: a property naming an instance for people (MPRIS `Identity`);
- `prefer`: `{interface, property, value}`: without the argument, the one instance whose property
  has that value is used (the player whose `PlaybackStatus` is `Playing`); otherwise the only
  instance running. Anything else is an error that lists the instances running.

A tool with `"instances": true` (instead of `method` or `property`) lists the instances running.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from aai_gateway.descriptor.model import Binding, Descriptor, Tool
from aai_gateway.problems import Problem, pointer

WILDCARD = ".*"
"""How a service pattern ends: `org.mpris.MediaPlayer2.*` matches `org.mpris.MediaPlayer2.vlc`."""


def is_pattern(service: object) -> bool:
    return isinstance(service, str) and service.endswith(WILDCARD)


@dataclass(frozen=True, slots=True)
class Member:
    """A property of each instance: `interface` and `property`, and for `prefer` the wanted `value`."""

    interface: str
    property: str
    value: Any = None

    @classmethod
    def from_json(cls, raw: Any) -> Member | None:
        if not isinstance(raw, Mapping):
            return None
        return cls(str(raw["interface"]), str(raw["property"]), raw.get("value"))


@dataclass(frozen=True, slots=True)
class Instances:
    """How the calls of a binding with a service pattern pick the instance they go to."""

    prefix: str
    """The pattern without its `*`, such as `org.mpris.MediaPlayer2.`."""
    argument: str
    label: Member | None = None
    prefer: Member | None = None
    description: str | None = None

    def matches(self, name: str) -> bool:
        return name.startswith(self.prefix) and len(name) > len(self.prefix)

    def short(self, name: str) -> str:
        """The bus name after the prefix: `vlc` for `org.mpris.MediaPlayer2.vlc`."""
        return name.removeprefix(self.prefix)

    def parameter(self) -> dict[str, Any]:
        """The JSON Schema of the argument added to every tool."""
        if self.description:
            text = self.description
        else:
            text = f"Which running instance to use: the end of its bus name after '{self.prefix}'"
            if self.label:
                text += f", or its {self.label.property}"
            text += ". Leave it out to use "
            if self.prefer:
                text += f"the one whose {self.prefer.property} is {self.prefer.value!r}, else "
            text += "the only one running."
        return {"type": "string", "minLength": 1, "description": text}


def of(binding: Binding) -> Instances | None:
    """How `binding` picks an instance; None when its service is one exact bus name."""
    service = binding.options.get("service")
    raw = binding.options.get("instance")
    if binding.automation != "dbus" or not is_pattern(service) or not isinstance(raw, Mapping):
        return None
    assert isinstance(service, str)
    return Instances(
        prefix=service[:-1],
        argument=str(raw["argument"]),
        label=Member.from_json(raw.get("label")),
        prefer=Member.from_json(raw.get("prefer")),
        description=raw.get("description"),
    )


def lists_instances(tool: Tool) -> bool:
    return tool.options.get("instances") is True


def with_argument(descriptor: Descriptor) -> Descriptor:
    """Every tool of a binding with a service pattern takes the binding's optional instance argument."""
    bindings = dict(descriptor.bindings)
    changed = False
    for platform, binding in descriptor.bindings.items():
        picking = of(binding)
        if picking is None:
            continue
        tools = tuple(t if lists_instances(t) else _add(t, picking) for t in binding.tools)
        bindings[platform] = replace(binding, tools=tools)
        changed = True
    return replace(descriptor, bindings=bindings) if changed else descriptor


def _add(tool: Tool, picking: Instances) -> Tool:
    params = dict(tool.parameters)
    props = dict(params.get("properties") or {})
    props[picking.argument] = picking.parameter()
    params["properties"] = props
    return replace(tool, parameters=params)


def problems(doc: Mapping[str, Any], shape: str, source: str) -> list[Problem]:
    """A service pattern only where a call can pick an instance: a direct DBus binding with an `instance` block."""
    if shape == "multi":
        linux = doc["platforms"].get("linux")
        if not isinstance(linux, Mapping):
            return []
        return _binding_problems(linux, ["platforms", "linux"], linux.get("tools", []), source, direct=True)
    execution = doc.get("execution")
    if not isinstance(execution, Mapping):
        return []
    direct = doc.get("platform") == "linux" and execution.get("type") == "dbus"
    return _binding_problems(execution, ["execution"], doc.get("tools", []), source, direct=direct, tools_at=["tools"])


def _binding_problems(
    binding: Mapping[str, Any],
    at: list[str | int],
    tools: list[Any],
    source: str,
    *,
    direct: bool,
    tools_at: list[str | int] | None = None,
) -> list[Problem]:
    found: list[Problem] = []
    service = binding.get("service")
    raw = binding.get("instance")
    tools_at = tools_at if tools_at is not None else [*at, "tools"]
    if is_pattern(service) and not direct:
        found.append(
            Problem(
                source,
                pointer([*at, "service"]),
                f"the pattern {service} is only for a direct DBus binding (platform linux, execution type dbus); "
                "other bindings call one exact bus name",
            )
        )
    elif is_pattern(service) and raw is None:
        found.append(
            Problem(
                source,
                pointer([*at, "service"]),
                f"the pattern {service} needs an `instance` block saying how a call picks one of the matching "
                'services, such as {"argument": "player"}',
            )
        )
    if raw is not None and not is_pattern(service):
        found.append(
            Problem(
                source,
                pointer([*at, "instance"]),
                "`instance` is only for a service pattern ending in '.*' (such as org.mpris.MediaPlayer2.*)",
            )
        )
    argument = raw.get("argument") if isinstance(raw, Mapping) else None
    for index, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            continue
        options = {**tool, **(tool.get("execution") or {})}
        if options.get("instances") is True and not is_pattern(service):
            found.append(
                Problem(
                    source,
                    pointer([*tools_at, index, "instances"]),
                    "lists the instances of a service pattern, but the binding's service is one exact name",
                )
            )
        params = tool.get("parameters", tool.get("inputSchema"))
        props = params.get("properties") if isinstance(params, Mapping) else None
        if argument and is_pattern(service) and isinstance(props, Mapping) and argument in props:
            key = "parameters" if "parameters" in tool else "inputSchema"
            found.append(
                Problem(
                    source,
                    pointer([*tools_at, index, key, "properties", argument]),
                    f"'{argument}' is the binding's instance argument, which the gateway adds to every tool; "
                    "rename this parameter",
                )
            )
    return found
