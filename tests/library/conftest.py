"""Each library test module starts its apps once, on its own private bus in its own folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import Bus


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def workdir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])


@pytest.fixture(scope="module")
def library_bus(workdir: Path) -> Iterator[Bus]:
    """A private session bus for the module's apps; other users may connect (VLC refuses to run as root)."""
    bus = Bus(workdir / "bus", any_user=True)
    (workdir / "bus").chmod(0o755)
    try:
        yield bus
    finally:
        bus.stop()
