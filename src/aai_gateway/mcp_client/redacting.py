"""What a server says, cut of the secrets it was given before anything reads it.

A server holds the secrets of its `env` and `headers`, and whatever it sends (a result, an error, its
tool list, a question for the user, its progress) may quote one, in any of the forms `secret_forms`
knows. All of that can reach the agent, the history, the log and the UI, so each message is checked
at the transport, once: one that quotes a secret is rebuilt with each form replaced by `[redacted]`.
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Sequence
from typing import Any

import anyio.abc
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from aai_gateway.secret_forms import cut

Item = SessionMessage | Exception


class RedactedStream(anyio.abc.ObjectReceiveStream[Item]):
    """The messages of `inner`, each cut of `forms` (every form of every secret, longest first)."""

    def __init__(self, inner: Any, forms: Sequence[str]) -> None:
        self._inner = inner
        self._forms = forms

    @property
    def last_context(self) -> contextvars.Context | None:
        """The sender's context of the last message, where the inner stream keeps one (the SDK asks)."""
        context: contextvars.Context | None = getattr(self._inner, "last_context", None)
        return context

    async def receive(self) -> Item:
        item: Item = await self._inner.receive()
        return redacted(item, self._forms)

    async def aclose(self) -> None:
        await self._inner.aclose()


def redacted(item: Item, forms: Sequence[str]) -> Item:
    """`item` as it came, unless it is a message quoting one of `forms`: then a copy with each cut."""
    if not isinstance(item, SessionMessage) or not forms:
        return item
    text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
    if not any(form in text for form in forms):
        return item
    try:
        message = types.jsonrpc_message_adapter.validate_python(cut(json.loads(text), forms), by_name=False)
    except ValidationError:  # a secret in a field that must hold something else: nothing of it is passed on
        return ValueError("a message from the server quoted one of its secrets where no text belongs; dropped")
    return SessionMessage(message, metadata=item.metadata)
