"""Consent questions as form elicitations, put mid-call (2025-11-25) or as input-required results (2026-07-28).

A client of the 2026-07-28 revision takes no request from the server while a call runs. When a call
needs the user's answer, it ends with an `InputRequiredResult` holding the question (the same form older
clients are sent) and a `requestState`; the client calls again with the answer in `inputResponses` and
the `requestState` echoed. The state holds the answers gathered so far and the questions just asked; it
is sealed (encrypted and bound to the tool's name and arguments) by the SDK's `RequestStateBoundary`,
which refuses a tampered or expired one, or one sent with another call, before the gateway sees it.
An answer is taken only for a question the previous round asked: as SEP-2322 asks, answers to other
questions are ignored and a question left unanswered is asked again; an answer that is not the form's
result, or accepts without one of the choices offered, is INVALID_PARAMS. None of these is a yes.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from aai_gateway.consent import Answer
from aai_gateway.consent.rounds import InputNeeded, Round, key
from aai_gateway.errors import InvalidParams
from aai_gateway.mcp.forms import chosen, form_of, takes_forms

log = logging.getLogger(__name__)

STATE_VERSION = 1


def boundary(audience: str) -> RequestStateBoundary:
    """The SDK's seal on every `requestState`, under a key this process makes and keeps to itself."""
    return RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=audience)


def modern(ctx: ServerRequestContext[Any]) -> bool:
    """Whether the request is of the 2026-07-28 era (it carries its own envelope, and takes no request back)."""
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


class Rounds:
    """The consent round of one 2026-07-28 `tools/call`: what was answered so far, and how to ask more."""

    def __init__(self, answers: dict[str, Answer | None]) -> None:
        self.round = Round(answers)

    @classmethod
    def of(cls, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> Rounds | None:
        """The round of a 2026-07-28 client that takes forms, else None (it is asked nothing: CONSENT_REQUIRED).

        Raises InvalidParams for an answer to a question the previous round asked that is not the form's."""
        if not takes_forms(ctx.session.client_capabilities):
            return None
        answers, asked = _state(params.request_state)
        responses = params.input_responses or {}
        unasked = set(responses) - set(asked)
        if unasked:
            log.info("ignored %d answer(s) to questions not asked: %s", len(unasked), _shown(min(unasked)))
        for name, offered in asked.items():
            if name in responses:
                answers[name] = _answer(name, responses[name], offered)
        return cls(answers)

    def input_required(self, needed: InputNeeded) -> types.InputRequiredResult:
        """The result that ends this round with `needed`'s questions (sealed on its way out by `boundary`)."""
        requests: dict[str, types.InputRequest] = {}
        asked: dict[str, list[str]] = {}
        for question in needed.questions:
            name = key(question)
            requests[name] = types.ElicitRequest(params=form_of(question))
            asked[name] = [answer.value for answer in question.titles()]
        answers = {name: answer.value if answer else None for name, answer in self.round.answers.items()}
        state = json.dumps({"v": STATE_VERSION, "answers": answers, "asked": asked}, separators=(",", ":"))
        return types.InputRequiredResult(input_requests=requests, request_state=state)


def _state(text: str | None) -> tuple[dict[str, Answer | None], dict[str, list[str]]]:
    """The answers and the questions of the previous rounds, from a `requestState` the boundary verified."""
    if not text:
        return {}, {}
    try:
        state = json.loads(text)
        known = {a.value: a for a in Answer}
        answers = {str(n): (known[v] if v is not None else None) for n, v in state["answers"].items()}
        asked = {str(n): [str(v) for v in offered] for n, offered in state["asked"].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # sealed by this process: cannot happen
        raise InvalidParams(f"requestState holds no consent round this gateway recognises ({exc})") from None
    if state.get("v") != STATE_VERSION:
        raise InvalidParams("requestState holds a consent round of another version; call again without it")
    return answers, asked


def _answer(name: str, response: types.InputResponse, offered: list[str]) -> Answer | None:
    where = f"inputResponses[{_shown(name)}]"
    if not isinstance(response, types.ElicitResult):
        raise InvalidParams(f"{where} must be the result of the form elicitation asked, got {type(response).__name__}")
    answer = chosen(response)
    if response.action == "accept" and (answer is None or answer.value not in offered):
        raise InvalidParams(f"{where} accepts without a decision the form offered (one of {', '.join(offered)})")
    return answer


def _shown(name: str) -> str:
    return json.dumps(name[:80])
