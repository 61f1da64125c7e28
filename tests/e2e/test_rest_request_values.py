"""Argument values no HTTP request can carry are the call's INVALID_PARAMS, naming what and where.

A URL of 64 KB or more, and a header value of whitespace only, used to fail inside the HTTP client
("failed unexpectedly (InvalidURL)", "could not reach … Illegal header value").
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.test_rest import SHAPE_A, Home, fail, gateway, home, rest_server, run  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

BAD: list[tuple[dict[str, Any], str]] = [
    ({"segment": "s" * 70_000}, "argument 'segment'"),
    ({"segment": "s", "q": "é" * 12_000}, "argument 'q'"),
    ({"segment": "s", "q": "x" * 65_536, "value": "v" * 100_000}, "argument 'q'"),  # the body's is not named
    ({"segment": "s", "note": "   "}, "header X-Note (from argument 'note'): a value may not be only whitespace"),
    ({"segment": "s", "note": "\t"}, "header X-Note (from argument 'note'): a value may not be only whitespace"),
]


@pytest.mark.hostile("encoding")
@pytest.mark.parametrize("case", BAD, ids=["long path", "long encoded query", "64 KiB query", "spaces", "tab"])
async def test_values_no_request_can_carry_are_invalid_params(home: Home, case: tuple[dict[str, Any], str]) -> None:  # noqa: F811
    args, named = case
    app = home.install(SHAPE_A)
    async with gateway(home) as session:
        code, kind, detail = await fail(session, app, "echo", **args)
        assert (code, kind) == (-32005, "INVALID_PARAMS"), detail
        assert named in detail
        if "argument" in named and "header" not in named:
            assert "the URL would be" in detail
        echoed = await run(session, app, "echo", segment="s", note=" n ")  # the gateway goes on serving
        assert echoed["headers"]["x-note"] == "n"
