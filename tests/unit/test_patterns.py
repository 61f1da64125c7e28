"""Strings written for a regex `pattern`: each one matches, and a pattern with an unsupported feature yields none."""

from __future__ import annotations

import re

import pytest

from aai_gateway.descriptor.patterns import pattern_examples


@pytest.mark.parametrize(
    "pattern",
    [
        r"^[a-z]{3,8}$",
        r"^[0-9]+$",
        r"^\d{4}-\d{2}-\d{2}$",
        r"^[A-Z][a-z]*$",
        r"^(foo|bar)-\d+$",
        r"^(?:[a-z]+\.)*[a-z]+$",
        r"^(?P<year>\d{4})$",
        r"^[^@\s]+@[^@\s]+$",
        r"^#[0-9a-fA-F]{6}$",
        r"^\+?[0-9 ]{7,15}$",
        r"^v\d+(\.\d+){2}$",
        r"^[a-z0-9_-]{3,16}$",
        r"^\w+\s\S+$",
        r"^\x41\u0042\.\n$",
        r"^a{,3}b{2,}c*?$",
        r"colou?r",
        r"^[]a]$",
        r"^a{1}?b$",
    ],
)
def test_simple_patterns_get_a_matching_string(pattern: str) -> None:
    written = list(pattern_examples(pattern))
    assert written
    assert all(re.search(pattern, text) for text in written)


@pytest.mark.parametrize(
    "pattern",
    [
        r"^(?!admin)[a-z]+$",
        r"^(?=.*\d)\w+$",
        r"(?<=x)y",
        r"^(\w)\1$",
        r"^(?P<c>a)(?P=c)$",
        r"^\bword\b$",
        r"^[[:alpha:]]+$",
        r"(?i)^abc$",
        r"^[a-z]{2000}$",
        r"^((a{999}){999}){999}$",
    ],
)
def test_unsupported_patterns_yield_nothing(pattern: str) -> None:
    assert list(pattern_examples(pattern)) == []
