"""Stdin's protocol offers each whole line to the fast path as it arrives and passes the rest on, in order."""

from __future__ import annotations

import asyncio

import pytest

from aai_gateway.mcp.pipes import Offering

pytestmark = pytest.mark.anyio


async def lines_of(reader: asyncio.StreamReader) -> list[bytes]:
    found = []
    while line := await reader.readline():
        found.append(line)
    return found


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
async def test_lines_split_anywhere_are_offered_whole_and_the_rest_kept_in_order(size: int) -> None:
    reader = asyncio.StreamReader()
    offering = Offering(reader)
    taken: list[bytes] = []

    def take(line: bytes) -> bool:
        if b"take" in line:
            taken.append(line)
            return True
        return False

    offering.shortcut = take
    data = b'{"a":1}\n{"take":2}\n\n{"b":3}\n{"take":4}\n{"c":"no newline at the end"}'
    for start in range(0, len(data), size):
        offering.data_received(data[start : start + size])
    offering.eof_received()
    assert taken == [b'{"take":2}\n', b'{"take":4}\n']
    assert await lines_of(reader) == [b'{"a":1}\n', b"\n", b'{"b":3}\n', b'{"c":"no newline at the end"}']


async def test_without_a_shortcut_every_line_is_passed_on() -> None:
    reader = asyncio.StreamReader()
    offering = Offering(reader)
    offering.data_received(b"one\ntw")
    offering.shortcut = lambda line: True  # set between two chunks: the split line is still whole
    offering.data_received(b"o\nthree")
    offering.shortcut = None
    offering.data_received(b"\n")
    offering.eof_received()
    assert await lines_of(reader) == [b"one\n", b"three\n"]


async def test_a_line_of_megabytes_in_many_pieces_is_offered_once_and_whole() -> None:
    reader = asyncio.StreamReader()
    offering = Offering(reader)
    taken: list[bytes] = []

    def take(line: bytes) -> bool:
        taken.append(line)
        return True

    offering.shortcut = take
    line = b'{"text":"' + b"x" * (3 << 20) + b'"}\n'
    for start in range(0, len(line), 1 << 16):
        offering.data_received(line[start : start + (1 << 16)])
    offering.eof_received()
    assert taken == [line]
    assert await lines_of(reader) == []
