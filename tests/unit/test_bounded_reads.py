"""Reading a file of at most N bytes reads what the file holds, not N: and a file that grows between the
size looked up and the read is read on to the limit, and refused past it."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aai_gateway import paths
from aai_gateway.descriptor.validate import read_bytes


def shrunk(real: Callable[..., os.stat_result], file: Path, by: int) -> Callable[..., os.stat_result]:
    """`real` (a stat function) reporting `file` `by` bytes smaller than it is: as if it grew after the stat."""
    inode = file.stat().st_ino

    def stat(target: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        found = real(target, *args, **kwargs)
        if found.st_ino != inode:
            return found
        fields = list(found)
        fields[6] -= by  # st_size
        return os.stat_result(fields)

    return stat


@pytest.mark.parametrize("size", [0, 1, 4096, 300_000])
def test_a_file_is_read_whole(tmp_path: Path, size: int) -> None:
    file = tmp_path / "f.json"
    file.write_bytes(b"x" * size)
    assert read_bytes(file, 1 << 20) == (b"x" * size, None)
    assert paths.read_limited(file, 1 << 20) == b"x" * size


def test_a_descriptor_that_grew_after_its_stat_is_read_on_to_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "aai.json"
    file.write_bytes(b"y" * 1000)
    smaller = shrunk(os.stat, file, 400)
    monkeypatch.setattr(Path, "stat", smaller)
    assert read_bytes(file, 1000) == (b"y" * 1000, None)
    data, problem = read_bytes(file, 999)
    assert data is None
    assert problem is not None
    assert "grew past the" in problem.message


def test_a_file_that_grew_after_its_stat_is_read_on_to_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "config.json"
    file.write_bytes(b"z" * 1000)
    smaller = shrunk(os.stat, file, 400)
    monkeypatch.setattr(Path, "stat", smaller)
    monkeypatch.setattr(os, "fstat", shrunk(os.fstat, file, 400))
    assert paths.read_limited(file, 1000) == b"z" * 1000
    with pytest.raises(paths.NotRead, match="grew past the limit"):
        paths.read_limited(file, 999)
