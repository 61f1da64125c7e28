"""What agents read: the one-line catalogue entry and the operation guide of seed 004."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aai_gateway.descriptor.model import Binding, Descriptor, Tool

AUTH_TEXT = {
    "macos": "Uses OS-level consent (TCC). First execution shows native dialog.",
    "windows": "Uses the app's COM automation; some apps ask the user to allow access on first use.",
    "linux": "Uses the desktop session's DBus; no sign-in is needed.",
    "android": "Uses Android intents.",
    "ios": "Uses iOS URL schemes.",
}


def catalogue_entry(app: Descriptor) -> str:
    """`【{names}】{description}. Aliases: {aliases}. Call to get guide.` (seed 004)."""
    names = "|".join(n.text for n in app.names)
    text = f"【{names}】{app.description.rstrip().rstrip('.')}."
    if app.aliases:
        text += f" Aliases: {', '.join(app.aliases)}."
    return text + " Call to get guide."


def guide(app: Descriptor, platform: str) -> str:
    """The markdown operation guide for the tools `platform` serves."""
    served = app.served(platform)
    lines = [
        f"# {app.name} Operation Guide",
        "",
        "## App Info",
        "",
        f"- ID: {app.app_id}",
        f"- Platform: {', '.join(b.platform for b in served) or 'none for ' + platform}",
    ]
    if len(app.names) > 1:
        lines.append(f"- Names: {' | '.join(_name(n.text, n.lang) for n in app.names)}")
    if app.aliases:
        lines.append(f"- Aliases: {', '.join(app.aliases)}")
    if app.description:
        lines.append(f"- Description: {app.description}")
    lines += ["", "## Authentication", ""]
    lines += [_auth_text(b) for b in served] or ["None."]
    lines += ["", "## Available Operations", ""]
    for binding, tool in app.tools(platform):
        lines += _operation(app, binding, tool)
    lines += ["---", "", "Use aai:exec tool to execute operations."]
    return "\n".join(lines) + "\n"


def _name(text: str, lang: str | None) -> str:
    return f"{text} ({lang})" if lang else text


def _auth_text(binding: Binding) -> str:
    if binding.platform != "web":
        return AUTH_TEXT.get(binding.platform, "Uses the platform's own authorization.")
    kind = (binding.auth or {}).get("type", "none")
    return {
        "oauth2": "OAuth 2 sign-in; run `aai-gateway auth login <app>` once if a call asks for it.",
        "api_key": "An API key, configured for the gateway by the user.",
        "bearer": "A bearer token, configured for the gateway by the user.",
    }.get(kind, "No authentication.")


def _operation(app: Descriptor, binding: Binding, tool: Tool) -> list[str]:
    lines = [f"### {tool.name}", ""]
    if tool.description:
        lines += [tool.description, ""]
    props: Mapping[str, Any] = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    lines += ["**Parameters**:", ""]
    if props:
        lines += [_parameter(name, spec, name in required) for name, spec in props.items()]
    else:
        lines.append("- none")
    args = example_args(tool.parameters)
    lines += [
        "",
        "**Example**:",
        "aai:exec({",
        f'app: "{app.app_id}",',
        f'tool: "{tool.name}",',
        f"args: {_js(args)}",
        "})",
        "",
    ]
    return lines


def _parameter(name: str, spec: Mapping[str, Any], required: bool) -> str:
    kind = type_label(spec)
    text = f"- {name} ({kind}, {'required' if required else 'optional'})"
    extras = []
    if spec.get("description"):
        extras.append(str(spec["description"]).rstrip())
    if "enum" in spec:
        extras.append("one of " + ", ".join(json.dumps(v, ensure_ascii=False) for v in spec["enum"]))
    if "default" in spec:
        extras.append(f"default {json.dumps(spec['default'], ensure_ascii=False)}")
    return text + (": " + "; ".join(extras) if extras else "")


def type_label(spec: Mapping[str, Any]) -> str:
    kind = spec.get("type", "any")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array":
        items = spec.get("items")
        return f"array of {type_label(items)}" if isinstance(items, Mapping) else "array"
    return str(kind)


def example_args(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments for the guide's example: the required ones, from examples, defaults or the type."""
    props: Mapping[str, Any] = schema.get("properties", {})
    required = schema.get("required", [])
    return {name: example_value(props.get(name, {}), name) for name in required}


def example_value(spec: Mapping[str, Any], name: str) -> Any:
    if spec.get("examples"):
        return spec["examples"][0]
    if "default" in spec:
        return spec["default"]
    if spec.get("enum"):
        return spec["enum"][0]
    if "const" in spec:
        return spec["const"]
    kind = spec.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    if kind == "integer":
        return max(int(spec.get("minimum", 1)), 1) if "minimum" not in spec else int(spec["minimum"])
    if kind == "number":
        return float(spec.get("minimum", 1.0))
    if kind == "boolean":
        return True
    if kind == "array":
        items = spec.get("items")
        return [example_value(items, name)] if isinstance(items, Mapping) else []
    if kind == "object":
        return example_args(spec)
    return f"<{name}>"


def _js(value: Any) -> str:
    """Render args the way seed 004 writes them: `{ title: "Submit report" }`."""
    if isinstance(value, dict):
        if not value:
            return "{}"
        inner = ", ".join(f"{_key(k)}: {_js(v)}" for k, v in value.items())
        return "{ " + inner + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_js(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _key(key: str) -> str:
    return key if key.isidentifier() else json.dumps(key, ensure_ascii=False)
