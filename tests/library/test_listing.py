"""What `library` says of each entry, through the installed command: installed, running or "cannot run
here: why" apart (a bus problem said once), a store's ratings (shown, and checked), and how the calls
of the last 30 days went."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from aai_gateway.history import HISTORY_FILE, HistoryStore, Record
from aai_gateway.history.record import now
from aai_gateway.library.store import parse_index, publish
from tests.library.test_store import add_entry, cli, home_with, served
from tests.support import TEST_APPS

DBUS = "org.freedesktop.dbus"
ECHO = "dev.aai.echo"
NO_SYSTEM_BUS = "unix:path=/nonexistent/aai-test-system-bus"


def test_a_missing_system_bus_is_said_once_and_its_entries_cannot_run(tmp_path: Path) -> None:
    env = home_with(tmp_path, []) | {"DBUS_SYSTEM_BUS_ADDRESS": NO_SYSTEM_BUS, "PATH": "/usr/bin:/bin"}
    assert cli(env, "install", "org.freedesktop.hostname1").returncode == 0
    listed = cli(env, "library", "systemd")
    assert listed.returncode == 0, listed.stderr
    out = listed.stdout
    block = out[out.index("org.freedesktop.hostname1  ") :]
    assert block.splitlines()[1] == "    installed; cannot run here: its system bus cannot be reached"
    assert "present here" not in out
    system = [line for line in out.splitlines() if "/nonexistent/aai-test-system-bus" in line]
    assert len(system) == 1, out
    count = out.count("cannot run here: its system bus")
    assert system[0].startswith(f"{count} entries cannot run here: the system bus could not be asked: ")

    as_json = {e["id"]: e for e in json.loads(cli(env, "library", "--json", "hostname").stdout)}
    entry = as_json["org.freedesktop.hostname1"]
    assert (entry["present"], entry["installed"], entry["running"]) == ("cannot", True, False)
    assert "/nonexistent/aai-test-system-bus" in entry["busProblem"]


def rated(**fields: Any) -> dict[str, Any]:
    return {
        "id": ECHO,
        "names": {"en": "Echo"},
        "description": "d",
        "version": "1.0",
        "descriptorUrl": "a.json",
        "sha256": "0" * 64,
    } | fields


def index(*entries: dict[str, Any]) -> bytes:
    return json.dumps({"store": {"name": "S", "formatVersion": 1}, "entries": list(entries)}).encode()


@pytest.mark.hostile("store")
@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"rating": {"average": 5.5, "count": 3}}, "/rating/average"),
        ({"rating": {"average": -1, "count": 3}}, "/rating/average"),
        ({"rating": {"average": 4, "count": -1}}, "/rating/count"),
        ({"rating": {"average": 4, "count": 1.5}}, "/rating/count"),
        ({"rating": {"average": 4, "count": True}}, "/rating/count"),
        ({"rating": {"average": "4", "count": 3}}, "/rating/average"),
        ({"rating": {"average": 4}}, "/rating"),
        ({"rating": {"average": 4, "count": 1, "weight": 9}}, "/rating"),
        ({"reviewsUrl": "http://reviews.example/echo"}, "/reviewsUrl"),
        ({"reviewsUrl": "javascript:alert(1)"}, "/reviewsUrl"),
        ({"reviewsUrl": "https://x.example/a b"}, "/reviewsUrl"),
        ({"reviewsUrl": "https://x.example/a\n"}, "/reviewsUrl"),
    ],
)
def test_a_bad_rating_or_reviews_url_leaves_the_entry_out(fields: dict[str, Any], says: str) -> None:
    catalog = parse_index(index(rated(**fields)), "https://store.example/index.json")
    assert catalog.entries == ()
    assert f"index.json#/entries/0{says}" in str(catalog.problems[0])


@pytest.mark.hostile("store")
def test_a_rating_that_is_not_a_json_number_refuses_the_index() -> None:
    body = index(rated(rating={"average": 4, "count": 3})).replace(b'"average": 4', b'"average": NaN')
    catalog = parse_index(body, "https://store.example/index.json")
    assert catalog.entries == ()
    assert "NaN is not a JSON number" in str(catalog.problems[0])


@pytest.fixture(scope="module")
def rated_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("rated")
    publish([], root, "rated store")
    add_entry(root, ECHO, (TEST_APPS / ECHO / "aai.json").read_bytes())
    doc = json.loads((root / "index.json").read_text())
    doc["entries"][0] |= {
        "rating": {"average": 4.25, "count": 12},
        "reviewsUrl": "https://reviews.example/echo",
        "category": "Developer",
    }
    (root / "index.json").write_text(json.dumps(doc))
    with served(root) as base:
        yield f"{base}/index.json"


def record(number: int, tool: str, ok: bool, days_ago: float = 1) -> Record:
    return Record(
        call_id=f"call{number:08d}",
        time=now() - timedelta(days=days_ago),
        caller="cli",
        transport="cli",
        app=DBUS,
        tool=tool,
        args={},
        status="ok" if ok else "error",
        duration_ms=1.0,
        error_code=None if ok else -32001,
        error_type=None if ok else "AUTOMATION_FAILED",
    )


def test_ratings_and_the_success_of_recent_calls_are_shown(tmp_path: Path, rated_store: str) -> None:
    env = home_with(tmp_path, [rated_store])
    history = HistoryStore(Path(env["HOME"]) / ".aai" / HISTORY_FILE)
    calls = [record(i, "list_names", ok=i != 0) for i in range(3)]
    calls += [record(3, "features", ok=True), record(4, "features", ok=False, days_ago=40)]
    try:
        for call in calls:
            history.submit(call).result(10)
    finally:
        history.close()

    echo = cli(env, "library", "echo")
    assert echo.returncode == 0, echo.stderr
    assert "    verified: unverified; Developer; source: store rated store; version 1.0.0" in echo.stdout
    assert "    rated 4.2 of 5 by 12 people; reviews: https://reviews.example/echo\n" in echo.stdout

    bus = cli(env, "library", "session bus").stdout
    assert "    ran 3 of 4 times in 30 days (list_names 2 of 3, features 1 of 1)\n" in bus
    [entry] = [e for e in json.loads(cli(env, "library", "--json", "session bus").stdout) if e["id"] == DBUS]
    assert entry["success"] == {"ok": 3, "calls": 4, "days": 30}
    assert entry["toolSuccess"]["list_names"] == {"ok": 2, "calls": 3, "days": 30}
    assert entry["rating"] is None
    assert entry["category"] == "System"
