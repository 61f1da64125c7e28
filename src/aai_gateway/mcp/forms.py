"""A consent question as an MCP form elicitation, and the answer a filled-in form gives.

Imports nothing of the SDK (its types only where a form is made): a stdio session served before the SDK
is imported decides with `takes_forms` whether its calls can ask at all (mcp/wire/front.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import mcp_types as types

from aai_gateway.consent import ANSWER_TITLES, Answer, Question


def consent_form(titles: Mapping[Answer, str] = ANSWER_TITLES) -> dict[str, Any]:
    """The form a consent question is put with: one choice among the answers offered."""
    return {
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Allow this?",
                "oneOf": [{"const": answer.value, "title": title} for answer, title in titles.items()],
            }
        },
        "required": ["decision"],
    }


def form_of(question: Question) -> types.ElicitRequestFormParams:
    import mcp_types as types  # noqa: PLC0415 (see the module's docstring)

    return types.ElicitRequestFormParams(message=question.message(), requested_schema=consent_form(question.titles()))


def takes_forms(capabilities: types.ClientCapabilities | Mapping[str, Any] | None) -> bool:
    """Whether a client declared form elicitation (a bare `elicitation: {}` is form; url-only is not), by its
    capabilities as the SDK read them or as sent."""
    if capabilities is None:
        return False
    if isinstance(capabilities, Mapping):
        elicitation = capabilities.get("elicitation")
        return isinstance(elicitation, Mapping) and (
            elicitation.get("form") is not None or elicitation.get("url") is None
        )
    declared = capabilities.elicitation
    return declared is not None and (declared.form is not None or declared.url is None)


def chosen(result: types.ElicitResult) -> Answer | None:
    """The answer a filled-in form gives: a decline is DENY; a dismissed form, or no valid choice, None."""
    if result.action == "decline":
        return Answer.DENY
    decision = (result.content or {}).get("decision") if result.action == "accept" else None
    known = {answer.value: answer for answer in Answer}
    return known.get(decision) if isinstance(decision, str) else None
