"""Plans on real apps: mpv (with mpv-mpris) and dunst on one private bus and display, started once per module."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.test_dunst import free_display
from tests.library.apps import desktop_env, started
from tests.support import Bus, Mpv, silent_wav, wait_until


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Desktop:
    bus: Bus
    mpv: Mpv
    env: dict[str, str]
    """The apps' environment, for dunstctl."""
    track: Path
    workdir: Path


@pytest.fixture(scope="module")
def desktop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Desktop]:
    workdir = tmp_path_factory.mktemp("plans")
    bus = Bus(workdir / "bus")
    try:
        with free_display(workdir) as display, ExitStack() as running:
            env = desktop_env(bus, workdir / "apps-home", display)
            (workdir / "dunstrc").write_text("[global]\n    monitor = 0\n    history_length = 50\n")
            names = ["org.freedesktop.Notifications"]
            running.enter_context(
                started(["dunst", "-config", str(workdir / "dunstrc")], env, workdir / "dunst.log", bus, names)
            )
            mpv = Mpv(bus, workdir)
            running.callback(mpv.stop)
            track = silent_wav(workdir / "Evening Song.wav")
            mpv.command("loadfile", str(track))
            wait_until(lambda: mpv.property("path") == str(track), 10, "mpv to load the track")
            yield Desktop(bus, mpv, env, track, workdir)
    finally:
        bus.stop()
