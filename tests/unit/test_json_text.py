"""The kept encoders write what `json.JSONEncoder` writes with the same options, byte for byte."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aai_gateway.json_text import encoder

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=30,
)


@pytest.mark.parametrize("compact", [False, True])
@given(value=values)
def test_the_same_text_as_the_stdlib_encoder(compact: bool, value: Any) -> None:
    separators = (",", ":") if compact else (", ", ": ")
    assert encoder(compact=compact)(value) == json.JSONEncoder(ensure_ascii=False, separators=separators).encode(value)


def test_what_json_has_no_type_for_goes_through_default_or_is_refused() -> None:
    thing = object()
    assert encoder(default=str)({"at": thing, (1): (2, 3)}) == json.dumps(
        {"at": thing, (1): (2, 3)}, ensure_ascii=False, default=str
    )
    with pytest.raises(TypeError):
        encoder()([thing])
