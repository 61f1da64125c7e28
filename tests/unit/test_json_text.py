"""The kept encoders write what `json.JSONEncoder` writes with the same options, byte for byte; the kept decoder
reads what `JSONDecoder.decode` reads, and refuses what it refuses in its words."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aai_gateway.json_text import decoder, encoder

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


def _outcome(decode: Any, text: str) -> tuple[str, Any]:
    try:
        return "value", decode(text)
    except ValueError as exc:
        return type(exc).__name__, str(exc)


def _no_constant(constant: str) -> None:
    raise ValueError(f"{constant} is not JSON")


texts = (
    values.map(lambda v: json.dumps(v, ensure_ascii=False))
    | st.text(alphabet='{}[]":,0123456789.eE+- \t\n\r\x0catrufnlsNIiy\\u', max_size=30)
    | st.builds(lambda v, tail: json.dumps(v) + tail, values, st.text(alphabet=" \t\n\r\x0b\xa0x{}[]", max_size=4))
)


@given(text=texts)
def test_the_decoder_reads_and_refuses_as_the_stdlib_decoder(text: str) -> None:
    kept = json.JSONDecoder(parse_constant=_no_constant)
    assert _outcome(decoder(kept), text) == _outcome(kept.decode, text)
