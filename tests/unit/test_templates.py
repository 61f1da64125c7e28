from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aai_gateway import templates


@pytest.mark.parametrize(
    ("template", "args", "expected"),
    [
        ("${count}", {"count": 3}, 3),
        ("${flag}", {"flag": False}, False),
        ("${tags}", {"tags": ["a"]}, ["a"]),
        ("Re: ${subject}!", {"subject": "hi"}, "Re: hi!"),
        ("${a}-${b}", {"a": 1, "b": [2]}, "1-[2]"),
        (["Hello", "${name}"], {"name": "Ada"}, ["Hello", "Ada"]),
        ({"q": "${q}", "n": 5}, {"q": "x"}, {"q": "x", "n": 5}),
        (7, {}, 7),
        ("$notaplaceholder {x}", {}, "$notaplaceholder {x}"),
    ],
)
def test_render(template: Any, args: dict[str, Any], expected: Any) -> None:
    assert templates.render(template, args) == expected


def test_missing_argument_is_named() -> None:
    with pytest.raises(templates.Missing) as caught:
        templates.render(["${a}", "${b}"], {"a": 1})
    assert caught.value.name == "b"
    assert templates.names(["${a}", {"k": "x ${b} ${c}"}]) == {"a", "b", "c"}


@given(st.text())
def test_values_are_data_never_template_text(value: str) -> None:
    """An argument that itself looks like a placeholder is never expanded again."""
    assert templates.render("${x}", {"x": value, "y": "SECRET"}) == value
    assert templates.render("<${x}>", {"x": value, "y": "SECRET"}) == f"<{value}>"
