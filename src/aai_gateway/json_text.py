"""Kept JSON encoders for what a call writes on its way: its answer, its record, their arguments and results;
and the decoder of its request.

`json.dumps(value, ensure_ascii=False)` builds an encoder on every call, and even a kept `JSONEncoder`'s
`encode` builds the C encoder's state anew each time: 0.85 µs of the 1.75 it takes for a record's row.
These keep that state. They leave out the check for a value that holds itself: what they are given is
JSON read from the wire, an app's answer converted to JSON values, or the gateway's own dicts, none of
which can; a value nested too deep fails with RecursionError.

`JSONDecoder.decode` matches the whitespace before and after the value with a regular expression each:
0.6 of the 1.5 µs a call's request takes. `decoder` scans a text that starts with its object or array
straight away, and leaves any other text, and every error, to `decode`.
"""

from __future__ import annotations

import json
import json.scanner
from collections.abc import Callable
from json import encoder as _stdlib
from typing import Any

Encode = Callable[[Any], str]
Decode = Callable[[str], Any]
JSON_SPACE = " \t\n\r"


def encoder(*, compact: bool = False, default: Callable[[Any], Any] | None = None) -> Encode:
    """JSON text with non-ASCII characters as they are; `compact` without a space after `,` and `:` (as the
    wire has it), `default` turning what JSON has no type for into something it has (else TypeError)."""
    item, key = (",", ":") if compact else (", ", ": ")
    python = json.JSONEncoder(ensure_ascii=False, separators=(item, key), default=default, check_circular=False)
    make = getattr(_stdlib, "c_make_encoder", None)
    if make is None:  # an interpreter without the C accelerator
        return python.encode
    chunks = make(None, python.default, _stdlib.encode_basestring, None, key, item, False, False, True)

    def encode(value: Any) -> str:
        return "".join(chunks(value, 0))

    return encode


def decoder(kept: json.JSONDecoder) -> Decode:
    """`kept.decode`, quicker for a text that starts with its object or array."""
    make = getattr(json.scanner, "c_make_scanner", None)
    if make is None:  # an interpreter without the C accelerator
        return kept.decode
    scan = make(kept)

    def decode(text: str) -> Any:
        if text[:1] in ("{", "["):
            try:
                value, end = scan(text, 0)
            except StopIteration:  # cut short: `decode` says where
                return kept.decode(text)
            if end == len(text) or not text[end:].strip(JSON_SPACE):
                return value
        return kept.decode(text)

    return decode
