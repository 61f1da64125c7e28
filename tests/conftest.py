from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from aai_gateway.config import load_settings
from aai_gateway.service import Gateway
from tests.support import TEST_APPS, Bus, Mpv, install_descriptor, running, start_app
from tests.system_bus import SystemServices, isolation_problem


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
async def echo_gateway(
    bus: Bus, echo_app: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Gateway]:
    """A gateway in this process with the echo app installed, on the private bus; consent asks by default."""
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", bus.address)
    home = tmp_path / "home"
    install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    (home / ".aai" / "config.json").write_text(json.dumps({"consent": {"default": "ask"}}))
    served = Gateway(load_settings({"HOME": str(home), "AAI_PLATFORM": "linux"}))
    try:
        yield served
    finally:
        await served.aclose()


@pytest.fixture
def mpv(bus: Bus, tmp_path: Path) -> Iterator[Mpv]:
    player = Mpv(bus, tmp_path)
    try:
        yield player
    finally:
        player.stop()


@pytest.fixture(scope="module")
def system_bus() -> Iterator[Bus]:
    """A private bus of the system type for the module's system services (DBUS_SYSTEM_BUS_ADDRESS). Its socket
    is in a folder every user can reach (pytest's are the test user's own): daemons such as polkitd drop to a
    user of their own before they connect."""
    workdir = Path(tempfile.mkdtemp(prefix="aai-system-bus-"))
    workdir.chmod(0o755)
    private = Bus(workdir, kind="system")
    try:
        yield private
    finally:
        private.stop()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="module")
def system_services(system_bus: Bus, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SystemServices]:
    """Debian's system daemons on `system_bus`, each in an overlay of /etc and /var/lib (skipped where that
    cannot be had: the tests never let a daemon write this machine's files)."""
    problem = isolation_problem()
    if problem is not None:
        pytest.skip(f"system services cannot be isolated here: {problem}")
    services = SystemServices(system_bus, tmp_path_factory.mktemp("system-services"))
    try:
        yield services
    finally:
        services.stop()
