"""A call's way back to our client: an MCP server's progress and requests, sent on as the client's own.

Progress goes out only when the client asked for it (a `progressToken`), elicitation and sampling
requests only to a client that declared the capability; otherwise the server gets a clear refusal.
`SessionRelay` serves a call the SDK handles; `ConnectionRelay` one the wire's fast path took, which
never carries a `progressToken` (those calls are left to the SDK).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.connection import Connection
from mcp.shared.message import ServerMessageMetadata

Answer = types.ElicitResult | types.CreateMessageResult


class _Relay:
    def __init__(self, params: types.InitializeRequestParams | None) -> None:
        self._capabilities = params.capabilities if params is not None else None

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        return None

    async def elicit(self, params: Mapping[str, Any]) -> dict[str, Any] | None:
        if self._capabilities is None or self._capabilities.elicitation is None:
            return None
        request = types.ElicitRequest.model_validate({"method": "elicitation/create", "params": dict(params)})
        return _json(await self._send(request, types.ElicitResult))

    async def sample(self, params: Mapping[str, Any]) -> dict[str, Any] | None:
        if self._capabilities is None or self._capabilities.sampling is None:
            return None
        request = types.CreateMessageRequest.model_validate(
            {"method": "sampling/createMessage", "params": dict(params)}
        )
        return _json(await self._send(request, types.CreateMessageResult))

    async def _send(
        self, request: types.ElicitRequest | types.CreateMessageRequest, result_type: type[Answer]
    ) -> Answer:
        raise NotImplementedError


class SessionRelay(_Relay):
    """On the session and request of one `tools/call` the SDK serves."""

    def __init__(self, ctx: ServerRequestContext[Any]) -> None:
        super().__init__(ctx.session.client_params)
        self._session = ctx.session
        self._token = (ctx.meta or {}).get("progress_token")
        self._related = ctx.request_id

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        if self._token is not None:
            await self._session.send_progress_notification(
                self._token, progress, total, message, related_request_id=str(self._related)
            )

    async def _send(
        self, request: types.ElicitRequest | types.CreateMessageRequest, result_type: type[Answer]
    ) -> Answer:
        related = self._related if self._session.can_send_request else None
        metadata = ServerMessageMetadata(related_request_id=related) if related is not None else None
        return await self._session.send_request(request, result_type, metadata=metadata)


class ConnectionRelay(_Relay):
    """On the connection of a call the wire's fast path took."""

    def __init__(self, connection: Connection) -> None:
        super().__init__(connection.client_params)
        self._connection = connection

    async def _send(
        self, request: types.ElicitRequest | types.CreateMessageRequest, result_type: type[Answer]
    ) -> Answer:
        return await self._connection.send_request(request, result_type=result_type)


def _json(result: Answer) -> dict[str, Any]:
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)
