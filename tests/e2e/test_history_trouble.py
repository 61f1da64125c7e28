"""The history when its database goes wrong under the installed gateway: deleted or overwritten while
running, garbage at start, a read-only `~/.aai` (as an ordinary user), a full disk (a small tmpfs).

Every call here fails argument validation on purpose: it is recorded all the same, and needs no app.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.raw_client import RawClient, spawn
from tests.e2e.test_history import exec_args, home_for
from tests.support import gateway_command

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

AS_NOBODY = ("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups")


def env_of(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DBUS_", "AAI_"))}
    env.update(HOME=str(home), AAI_PLATFORM="linux", TMPDIR=str(home / "tmp"))
    (home / "tmp").mkdir(exist_ok=True)
    return env


def run(env: dict[str, str], *args: str, prefix: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, gateway_command(), *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def recorded(env: dict[str, str], prefix: Sequence[str] = ()) -> set[str]:
    done = run(env, "history", "--json", "--limit", "100000", prefix=prefix)
    assert done.returncode == 0, done.stderr
    return {record["args"]["txt"] for record in json.loads(done.stdout)}


async def start(env: dict[str, str], stderr: Path, prefix: Sequence[str] = ()) -> RawClient:
    client = await spawn(env, stderr, *prefix)
    await client.initialize("trouble-test", list_tools=False)
    return client


async def call(client: RawClient, names: Sequence[str]) -> list[dict[str, Any]]:
    """One call per name, one after another (each alone, the path a lone client takes); their errors."""
    errors = []
    for name in names:
        answer = await client.message("tools/call", {"name": "aai_exec", "arguments": exec_args("echo", txt=name)})
        assert answer["result"]["isError"], answer
        errors.append(answer["result"]["structuredContent"]["error"])
    return errors


async def wait_for(check: Callable[[], bool], what: str, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.2)


def _delete(db: Path) -> None:
    db.unlink()


def _delete_with_log(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        db.with_name(db.name + suffix).unlink(missing_ok=True)


def _garbage_in_place(db: Path) -> None:
    db.write_bytes(b"this is not a database\n" * 400)


def _garbage_replaced(db: Path) -> None:
    spare = db.with_name("spare")
    spare.write_bytes(os.urandom(20_000))
    spare.replace(db)


DAMAGE: dict[str, Callable[[Path], None]] = {
    "deleted": _delete,
    "deleted-with-its-log": _delete_with_log,
    "garbage-written-in-place": _garbage_in_place,
    "garbage-moved-over-it": _garbage_replaced,
}


@pytest.mark.hostile("history")
@pytest.mark.parametrize("damage", list(DAMAGE))
async def test_a_database_damaged_while_running_is_started_afresh_and_keeps_later_calls(
    tmp_path: Path, damage: str
) -> None:
    home = home_for(tmp_path)
    env = env_of(home)
    db = home / ".aai" / "history.db"
    client = await start(env, tmp_path / "stderr.log")
    try:
        await call(client, [f"before{i}" for i in range(5)])
        DAMAGE[damage](db)
        errors = await call(client, [f"after{i}" for i in range(20)])
        assert {e["code"] for e in errors} == {-32005}
    finally:
        await client.aclose()

    assert {f"after{i}" for i in range(20)} <= recorded(env)
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    aside = list(db.parent.glob("history.db.corrupt-*"))
    log = (tmp_path / "stderr.log").read_text()
    if damage.startswith("garbage"):
        assert aside, log
        assert "is corrupt" in log
        assert "moved aside to history.db.corrupt-" in log
    else:
        assert not aside
        assert "a new history starts" in log or "deleted or replaced" in log


@pytest.mark.hostile("history")
async def test_garbage_at_start_is_named_by_history_then_moved_aside_by_the_gateway(tmp_path: Path) -> None:
    home = home_for(tmp_path)
    env = env_of(home)
    db = home / ".aai" / "history.db"
    db.write_bytes(b"garbage " * 1000)

    done = run(env, "history")
    assert done.returncode == 1
    assert "is corrupt" in done.stderr
    assert "history.db.corrupt-<UTC time>" in done.stderr

    client = await start(env, tmp_path / "stderr.log")
    try:
        await call(client, ["first"])
    finally:
        await client.aclose()
    assert recorded(env) == {"first"}
    (aside,) = db.parent.glob("history.db.corrupt-*")
    assert aside.read_bytes() == b"garbage " * 1000


@pytest.fixture
def nobody_home() -> Iterator[Path]:
    """A home that the user nobody owns, outside root's private temporary folders."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the gateway as an ordinary user")
    base = Path(tempfile.mkdtemp(prefix="aai-nobody-"))
    base.chmod(0o755)
    try:
        yield base / "home"
    finally:
        for path in [base, *base.rglob("*")]:
            if path.is_dir():
                path.chmod(0o755)
        shutil.rmtree(base)


def _own(home: Path) -> None:
    for path in [home, *home.rglob("*")]:
        os.chown(path, 65534, 65534)


@pytest.mark.hostile("history")
@pytest.mark.parametrize("required", [False, True], ids=["calls-go-on", "requireHistory"])
async def test_a_read_only_aai_home_keeps_records_in_memory_and_says_so(
    nobody_home: Path, tmp_path: Path, required: bool
) -> None:
    home = home_for(nobody_home.parent, **({"requireHistory": True} if required else {}))
    env = env_of(home)
    _own(home)
    aai = home / ".aai"
    aai.chmod(0o555)
    stderr = tmp_path / "stderr.log"
    client = await start(env, stderr, AS_NOBODY)
    try:
        errors = await call(client, ["ro0", "ro1", "ro2"])
        log = stderr.read_text()
        assert "ERROR" in log
        assert "the call history cannot be written" in log
        if required:
            assert {e["type"] for e in errors} == {"AUTOMATION_FAILED"}
            assert all("requireHistory" in e["detail"] and "cannot be written" in e["detail"] for e in errors)
        else:
            assert {e["code"] for e in errors} == {-32005}

        told = run(env, "history", prefix=AS_NOBODY)
        assert "3 record(s) wait in memory" in told.stderr, told
        assert "cannot be written" in told.stderr

        aai.chmod(0o755)
        await wait_for(lambda: recorded(env, AS_NOBODY) == {"ro0", "ro1", "ro2"}, "waiting records written")
        assert "written again: 3 waiting record(s) written" in stderr.read_text()
        assert run(env, "history", prefix=AS_NOBODY).stderr == ""
        if required:
            assert {e["code"] for e in await call(client, ["ro3"])} == {-32005}
    finally:
        aai.chmod(0o755)
        await client.aclose()


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An AAI home on a tmpfs of 2 MB, mounted for the test and unmounted after."""
    home = tmp_path / "home"
    aai = home / ".aai"
    aai.mkdir(parents=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(aai)], check=False, capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.decode().strip()}")
    try:
        yield home
    finally:
        subprocess.run(["umount", "-l", str(aai)], check=False)


def fill(folder: Path) -> Path:
    filler = folder / "filler"
    with filler.open("wb", buffering=0) as file, contextlib.suppress(OSError):
        while True:
            file.write(b"\0" * 4096)
    return filler


@pytest.mark.hostile("history")
async def test_a_full_disk_is_named_and_the_records_are_written_once_there_is_room(
    small_disk: Path, tmp_path: Path
) -> None:
    home = home_for(small_disk.parent)
    env = env_of(home)
    stderr = tmp_path / "stderr.log"
    client = await start(env, stderr)
    try:
        await call(client, ["warm"])
        filler = fill(home / ".aai")
        names = [f"full{i}" for i in range(200)]
        errors = await call(client, names)
        assert len(errors) == 200
        log = stderr.read_text()
        assert "disk full" in log
        assert "cannot rollback" not in log
        assert "Logging error" not in log, log
        assert "Traceback" not in log, log
        told = run(env, "history")
        assert "disk full" in told.stderr, told
        assert "wait in memory" in told.stderr

        filler.unlink()
        await wait_for(lambda: set(names) <= recorded(env), "records written once there is room")
        assert run(env, "history").stderr == ""
    finally:
        await client.aclose()
