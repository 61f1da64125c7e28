"""The Transmission entry, a web app on this computer: transmission-daemon's RPC on a loopback port.

The gateway must do Transmission's X-Transmission-Session-Id handshake itself; what it did is checked through
the same RPC, asked directly by the test, and on disk.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.mcp_client import stdio_session
from tests.library.library_gateway import LIBRARY, Exec, read_only_tools
from tests.library.waiting import waiting
from tests.support import gateway_command, stop, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

APP = "com.transmissionbt.transmission"
PIECE = 16384


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Rpc:
    """Transmission's RPC asked directly, with its session-id handshake."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.session = ""

    def __call__(self, method: str, **arguments: Any) -> dict[str, Any]:
        for _ in range(2):
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            try:
                body = json.dumps({"method": method, "arguments": arguments})
                connection.request("POST", "/transmission/rpc", body, {"X-Transmission-Session-Id": self.session})
                reply = connection.getresponse()
                text = reply.read()
            finally:
                connection.close()
            if reply.status == 409:
                self.session = reply.headers["X-Transmission-Session-Id"]
                continue
            answer: dict[str, Any] = json.loads(text)
            assert answer["result"] == "success", answer
            return dict(answer["arguments"])
        raise AssertionError("Transmission kept refusing the session id")

    def answers(self) -> bool:
        try:
            self("session-get")
        except OSError:
            return False
        return True

    def torrents(self, *fields: str) -> list[dict[str, Any]]:
        listed: list[dict[str, Any]] = self("torrent-get", fields=["id", *fields])["torrents"]
        return listed


@pytest.fixture(scope="module")
def rpc(workdir: Path) -> Iterator[Rpc]:
    port = free_port()
    downloads = workdir / "downloads"
    downloads.mkdir()
    argv = ["transmission-daemon", "--foreground", "--config-dir", str(workdir / "config"), "--port", str(port)]
    argv += ["--rpc-bind-address", "127.0.0.1", "--no-auth", "--allowed", "127.0.0.1", "--download-dir", str(downloads)]
    argv += ["--no-dht", "--no-lpd", "--no-portmap", "--peerport", str(free_port()), "--no-incomplete-dir"]
    with (workdir / "transmission.log").open("w") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        client = Rpc(port)
        wait_until(client.answers, 30, "transmission-daemon's RPC to answer")
        yield client
    finally:
        stop(proc)


def bencode(value: Any) -> bytes:
    if isinstance(value, int):
        return b"i%de" % value
    if isinstance(value, bytes):
        return b"%d:%s" % (len(value), value)
    if isinstance(value, str):
        return bencode(value.encode())
    if isinstance(value, list):
        return b"l" + b"".join(bencode(v) for v in value) + b"e"
    assert isinstance(value, dict)
    return b"d" + b"".join(bencode(k) + bencode(value[k]) for k in sorted(value)) + b"e"


def torrent_of(data: Path, out: Path) -> Path:
    """A single-file .torrent of `data`, with a tracker nobody answers."""
    content = data.read_bytes()
    pieces = b"".join(
        hashlib.sha1(content[i : i + PIECE], usedforsecurity=False).digest() for i in range(0, len(content), PIECE)
    )
    info = {"name": data.name, "length": len(content), "piece length": PIECE, "pieces": pieces}
    out.write_bytes(bencode({"announce": "http://127.0.0.1:9/announce", "info": info}))
    return out


def installed(home: Path, port: int) -> dict[str, str]:
    """The entry installed with the port the test's daemon listens on, and http to loopback allowed."""
    text = (LIBRARY / APP / "aai.json").read_text()
    assert "http://127.0.0.1:9091/transmission" in text
    app_dir = home / ".aai" / APP
    app_dir.mkdir(parents=True)
    (app_dir / "aai.json").write_text(text.replace("127.0.0.1:9091", f"127.0.0.1:{port}"))
    (home / ".aai" / "config.json").write_text(json.dumps({"web": {"allowHttpLoopback": True}}))
    return {"HOME": str(home), "AAI_PLATFORM": "linux"}


async def test_transmission_adds_pauses_verifies_and_removes(rpc: Rpc, workdir: Path) -> None:
    downloads = workdir / "downloads"
    data = downloads / "field-notes.txt"
    data.write_bytes(b"".join(b"line %05d of the field notes\n" % i for i in range(3000)))
    torrent = torrent_of(data, workdir / "field-notes.torrent")
    async with stdio_session(installed(workdir / "home", rpc.port), workdir / "stderr.log") as session:
        run = Exec(session, APP)
        added = await run("add_torrent", source=str(torrent), paused=True)
        assert added["result"] == "success"
        new = added["arguments"]["torrent-added"]
        assert new["name"] == "field-notes.txt"
        [seen] = rpc.torrents("name", "status", "hashString")
        assert (seen["id"], seen["name"]) == (new["id"], "field-notes.txt")
        assert seen["status"] in {0, 1, 2}  # stopped, or checking the data it found in place
        assert seen["hashString"] == new["hashString"]
        ids = [new["id"]]

        await run("verify_torrents", ids=ids)
        wait_until(
            lambda: rpc.torrents("percentDone", "status")[0] == {"id": new["id"], "percentDone": 1, "status": 0},
            20,
            "the data to verify complete",
        )
        await run("resume_torrents", ids=ids)
        wait_until(lambda: rpc.torrents("status")[0]["status"] == 6, 20, "the torrent to seed")
        await run("pause_torrents", ids=ids)
        wait_until(lambda: rpc.torrents("status")[0]["status"] == 0, 10, "the torrent to stop")
        await run("set_turtle_mode", on=True)
        assert rpc("session-get")["alt-speed-enabled"] is True

        needs: dict[str, dict[str, Any]] = {"torrent_details": {"ids": ids}, "free_space": {"path": str(downloads)}}
        answers = {tool: await run(tool, **needs.get(tool, {})) for tool in read_only_tools(APP)}
        assert {a["result"] for a in answers.values()} == {"success"}
        [listed] = answers["list_torrents"]["arguments"]["torrents"]
        assert (listed["name"], listed["percentDone"], listed["status"]) == ("field-notes.txt", 1, 0)
        [detailed] = answers["torrent_details"]["arguments"]["torrents"]
        assert detailed["files"][0]["length"] == data.stat().st_size
        assert detailed["magnetLink"].startswith("magnet:?xt=urn:btih:" + new["hashString"])
        assert answers["session_stats"]["arguments"]["pausedTorrentCount"] == 1
        assert answers["session_settings"]["arguments"]["download-dir"] == str(downloads)
        assert answers["free_space"]["arguments"]["size-bytes"] > 0

        await run("remove_torrents", ids=ids)
        wait_until(lambda: rpc.torrents() == [], 10, "the torrent to be removed")
        assert data.exists()  # delete_data defaults to false
        duplicate = await run("add_torrent", source=str(torrent), paused=True)
        again = duplicate["arguments"]["torrent-added"]["id"]
        await run("remove_torrents", ids=[again], delete_data=True)
        wait_until(lambda: not data.exists(), 10, "Transmission to delete the data")


async def test_an_added_torrent_and_turtle_mode_are_put_back_by_their_undo(rpc: Rpc, workdir: Path) -> None:
    """The entry's undos run as a plan runs them: a torrent added is removed by the id Transmission gave it (its
    data kept), one Transmission had already is left alone, and turtle mode goes back to what it was."""
    data = workdir / "downloads" / "undo-notes.txt"
    data.write_bytes(b"".join(b"note %05d to be undone\n" % i for i in range(2000)))
    torrent = torrent_of(data, workdir / "undo-notes.torrent")
    had = rpc.torrents()
    async with stdio_session(installed(workdir / "undo-home", rpc.port), workdir / "undo-stderr.log") as session:
        run = Exec(session, APP)
        step = await run.step("add_torrent", source=str(torrent), paused=True)
        new = step.result["arguments"]["torrent-added"]["id"]
        assert rpc.torrents() == [*had, {"id": new}]
        assert step.undo_args() == {"ids": [new], "delete_data": False}

        again = await run.step("add_torrent", source=str(torrent), paused=True)
        assert again.result["arguments"]["torrent-duplicate"]["id"] == new
        kind, detail = await run.error(again.undo.tool, **again.undo_args())  # no id of a torrent it added
        assert kind == "INVALID_PARAMS", detail
        assert rpc.torrents() == [*had, {"id": new}]

        await run.undo(step)
        wait_until(lambda: rpc.torrents() == had, 10, "the undo to remove the torrent added")
        assert data.exists()

        for before in (False, True):
            rpc("session-set", **{"alt-speed-enabled": before})
            step = await run.step("set_turtle_mode", on=not before)
            assert rpc("session-get")["alt-speed-enabled"] is (not before)
            await run.undo(step)
            assert rpc("session-get")["alt-speed-enabled"] is before


async def test_a_wait_notices_a_torrent_finishing_by_polling(rpc: Rpc, workdir: Path) -> None:
    """torrents_finished polls list_torrents: a torrent added without its data is 0 % done; once the data is in
    place and verified it is 100 %, and the pending wait returns it. The wait and its polls are in the history."""
    downloads = workdir / "downloads"
    data = downloads / "survey.txt"
    data.write_bytes(b"".join(b"survey point %05d\n" % i for i in range(4000)))
    torrent = torrent_of(data, workdir / "survey.torrent")
    kept = data.rename(workdir / "survey.txt")
    home = workdir / "wait-home"
    env = installed(home, rpc.port)
    async with stdio_session(env, workdir / "wait-stderr.log") as session:
        run = Exec(session, APP)
        added = (await run("add_torrent", source=str(torrent), paused=True))["arguments"]["torrent-added"]
        wait_until(lambda: rpc.torrents("status")[0]["status"] == 0, 20, "the torrent to stop checking")
        assert rpc.torrents("percentDone")[0]["percentDone"] == 0
        done = "contains(finished[].name, 'survey.txt')"
        async with waiting(session, app=APP, event="torrents_finished", filter=done, timeout=120) as wait:
            kept.rename(data)
            rpc("torrent-verify", ids=[added["id"]])
        answer = await wait.answer()
        assert answer["payload"] == {"finished": [{"id": added["id"], "name": "survey.txt"}]}
        await run("remove_torrents", ids=[added["id"]], delete_data=True)
    listed = subprocess.run(
        [gateway_command(), "history", "--app", APP, "--json"], env=env, capture_output=True, text=True, check=True
    )
    records = json.loads(listed.stdout)
    assert "(wait) torrents_finished" in [r["tool"] for r in records]
    polls = [r for r in records if r["tool"] == "list_torrents"]
    assert len(polls) >= 2
