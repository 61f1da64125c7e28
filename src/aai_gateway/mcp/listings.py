"""What `resources/list`, `resources/templates/list` and `prompts/list` answer: each app's descriptor as
a resource, the one template that names them, and no prompts, as plain JSON in their wire form. The
SDK's server and the stdio front (wire/front.py) answer from here alike; it imports nothing of the SDK.
"""

from __future__ import annotations

from typing import Any

from aai_gateway.mcp.names import APP_PREFIX
from aai_gateway.service import Gateway

DESCRIPTOR_MIME = "application/aai+json"
APP_TEMPLATE = APP_PREFIX + "{appId}"


def resources(gateway: Gateway) -> dict[str, Any]:
    listed = []
    for app in gateway.apps():
        resource = {"uri": APP_PREFIX + app.app_id, "name": app.name, "mimeType": DESCRIPTOR_MIME}
        if app.description is not None:
            resource["description"] = app.description
        listed.append(resource)
    return {"resources": listed}


def templates() -> dict[str, Any]:
    template = {
        "uriTemplate": APP_TEMPLATE,
        "name": "app descriptor",
        "description": "The aai.json descriptor of an installed app; complete appId for the ids served",
        "mimeType": DESCRIPTOR_MIME,
    }
    return {"resourceTemplates": [template]}


def prompts() -> dict[str, Any]:
    return {"prompts": []}
