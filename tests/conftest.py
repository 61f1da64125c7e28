from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import TEST_APPS, Bus, Mpv, running, start_app


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def bus(tmp_path: Path) -> Iterator[Bus]:
    """A private session bus with no service directories: nothing starts unless a test starts it."""
    session = Bus(tmp_path / "bus")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def echo_app(bus: Bus) -> Iterator[None]:
    with running(start_app([sys.executable, str(TEST_APPS / "echo_service.py")], bus.env())):
        yield


@pytest.fixture
def mpv(bus: Bus, tmp_path: Path) -> Iterator[Mpv]:
    player = Mpv(bus, tmp_path)
    try:
        yield player
    finally:
        player.stop()
