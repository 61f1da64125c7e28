"""Consent questions put between rounds of one call, for clients that take no request in the middle of one.

Such a client (MCP 2026-07-28) is asked by ending the call with the question, and answers by calling
again with the answer. The call's code path runs again from the start, and this round's `Round.ask`
returns the answers gathered in the earlier rounds instead of asking; a question with no answer yet ends
the round by raising `InputNeeded`, before anything of the call has run (a question always comes before
what it is about). How the questions and answers travel is the transport's business.

A question is known by `key`: a digest of what it asks (app, tool, the text shown, the choices), so an
answer is used only for the very question the user saw: an install whose command line changed between
the rounds is asked about again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from aai_gateway.consent.gate import Question
from aai_gateway.consent.policy import Answer


class InputNeeded(BaseException):
    """The call ends here to put `questions` to the user; it runs again once they are answered.

    A BaseException, as `asyncio.CancelledError` is: the call is not over, so no `except Exception` on
    the way (an executor's, the history's) may take it for a failure and record it as one."""

    def __init__(self, questions: tuple[Question, ...]) -> None:
        super().__init__(f"{len(questions)} question(s) for the user")
        self.questions = questions


def key(question: Question) -> str:
    """The question's stable name across rounds: the same question always has the same key."""
    shown = [question.app, question.tool, question.text, question.destructive, [a.value for a in question.titles()]]
    digest = hashlib.sha256(json.dumps(shown, ensure_ascii=True).encode()).hexdigest()
    return f"consent-{digest[:24]}"


class Round:
    """One round of a call: the answers given so far (None: the user dismissed the question)."""

    def __init__(self, answers: Mapping[str, Answer | None]) -> None:
        self.answers = dict(answers)

    async def ask(self, question: Question) -> Answer | None:
        """An `Ask`: the answer given in an earlier round, else the round ends with the question."""
        name = key(question)
        if name in self.answers:
            return self.answers[name]
        raise InputNeeded((question,))
