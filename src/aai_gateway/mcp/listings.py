"""What `resources/list`, `resources/templates/list` and `prompts/list` answer: each app's descriptor as
a resource, the one template that names them, and no prompts. The SDK's server and the stdio front
(wire/front.py) answer from here alike; it imports nothing of the SDK but its types.
"""

from __future__ import annotations

import mcp_types as types

from aai_gateway.mcp.names import APP_PREFIX
from aai_gateway.service import Gateway

DESCRIPTOR_MIME = "application/aai+json"
APP_TEMPLATE = APP_PREFIX + "{appId}"


def resources(gateway: Gateway) -> types.ListResourcesResult:
    return types.ListResourcesResult(
        resources=[
            types.Resource(
                uri=APP_PREFIX + app.app_id, name=app.name, description=app.description, mime_type=DESCRIPTOR_MIME
            )
            for app in gateway.apps()
        ]
    )


def templates() -> types.ListResourceTemplatesResult:
    template = types.ResourceTemplate(
        uri_template=APP_TEMPLATE,
        name="app descriptor",
        description="The aai.json descriptor of an installed app; complete appId for the ids served",
        mime_type=DESCRIPTOR_MIME,
    )
    return types.ListResourceTemplatesResult(resource_templates=[template])


def prompts() -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[])
