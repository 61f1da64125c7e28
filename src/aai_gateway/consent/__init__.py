"""Consent per caller, app and tool: policy (pure), the decisions file, pending requests, asking."""

from aai_gateway.consent.gate import Ask, ConsentGate, Question, command
from aai_gateway.consent.pending import PendingRequest
from aai_gateway.consent.policy import ANSWER_TITLES, Answer, Grant, Verdict, decide
from aai_gateway.consent.store import ConsentStore

__all__ = [
    "ANSWER_TITLES",
    "Answer",
    "Ask",
    "ConsentGate",
    "ConsentStore",
    "Grant",
    "PendingRequest",
    "Question",
    "Verdict",
    "command",
    "decide",
]
