from __future__ import annotations

import pytest

from aai_gateway.errors import ALL_ERRORS, AaiError
from aai_gateway.mcp.errors import to_mcp


def all_subclasses(cls: type[AaiError]) -> set[type[AaiError]]:
    found = set(cls.__subclasses__())
    for sub in list(found):
        found |= all_subclasses(sub)
    return found


def test_every_error_is_listed_with_a_unique_code_in_the_protocol_range() -> None:
    assert all_subclasses(AaiError) == set(ALL_ERRORS)
    codes = [e.code for e in ALL_ERRORS]
    assert sorted(codes, reverse=True) == list(range(-32001, -32016, -1))
    assert len({e.type for e in ALL_ERRORS}) == len(ALL_ERRORS)


@pytest.mark.parametrize("error", ALL_ERRORS, ids=lambda e: e.type)
def test_every_error_maps_to_an_mcp_error_with_code_type_and_detail(error: type[AaiError]) -> None:
    mapped = to_mcp(error("what went wrong"))
    assert mapped.error.code == error.code
    assert mapped.error.data == {"type": error.type, "detail": "what went wrong"}
    assert mapped.error.message == f"{error.title}: what went wrong"
