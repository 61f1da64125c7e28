"""The decisions file: kept across restarts, private, replaced whole, and re-read when another process changes it."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from aai_gateway.consent import Answer, ConsentStore


def test_decisions_survive_a_restart_in_a_private_file(tmp_path: Path) -> None:
    path = tmp_path / "aai" / "consent.json"
    store = ConsentStore(path)
    allowed = store.allow("dev.aai.notes", "Claude", "add_note")
    denied = store.deny("io.mpv")
    assert allowed.source == "cli"
    assert allowed.created.endswith("+00:00")
    restarted = ConsentStore(path)
    assert restarted.decisions() == (allowed, denied)
    if sys.platform != "win32":
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    data = json.loads(path.read_text("utf-8"))
    assert data["version"] == 1
    assert data["decisions"][1] == {
        "id": denied.id,
        "caller": None,
        "app": "io.mpv",
        "tool": None,
        "decision": "deny",
        "once": False,
        "created": denied.created,
        "source": "cli",
    }


def test_a_decision_with_the_same_keys_replaces_the_old_one(tmp_path: Path) -> None:
    store = ConsentStore(tmp_path / "consent.json")
    store.deny("a", "c", "t")
    store.allow("a", "c")  # another scope: kept beside
    latest = store.allow("a", "c", "t")
    assert [(g.decision, g.tool) for g in store.decisions()] == [("allow", None), ("allow", "t")]
    assert store.decisions()[-1] == latest


def test_a_running_checker_sees_changes_made_by_another_process(tmp_path: Path) -> None:
    path = tmp_path / "consent.json"
    running, cli = ConsentStore(path), ConsentStore(path)
    assert running.decisions() == ()
    granted = cli.allow("io.mpv", "Claude")
    assert running.decisions() == (granted,)
    assert cli.revoke("io.mpv", "Claude") == [granted]
    assert running.decisions() == ()
    again = cli.allow("io.mpv", "Claude")
    assert running.decisions() == (again,)
    path.unlink()
    assert running.decisions() == ()


def test_a_checker_reads_the_file_only_when_it_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "consent.json"
    ConsentStore(path).allow("a")
    running = ConsentStore(path)
    reads: list[Path] = []
    original = Path.read_text

    def counting(self: Path, *args: object, **kwargs: object) -> str:
        reads.append(self)
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", counting)
    for _ in range(100):
        running.decisions()
    assert len(reads) == 1
    ConsentStore(path).deny("b")
    assert [g.app for g in running.decisions()] == ["a", "b"]
    assert len(reads) == 3  # the writer read it once under its lock, the checker once after


def test_revoke_by_keys_by_id_and_every_decision_of_an_app(tmp_path: Path) -> None:
    store = ConsentStore(tmp_path / "consent.json")
    any_caller = store.allow("a")
    for_claude = store.allow("a", "Claude")
    for_tool = store.allow("a", "Claude", "t")
    other = store.deny("b")
    assert store.revoke("a", "Cline") == []
    assert store.revoke("a") == [any_caller]  # exactly these keys: the other decisions stay
    assert store.revoke_id(for_tool.id) == [for_tool]
    assert store.revoke_id("nope") == []
    store.allow("a", tool="x")
    assert [g.app for g in store.revoke_all("a")] == ["a", "a"]
    assert store.decisions() == (other,)
    assert for_claude not in store.decisions()


def test_a_one_time_decision_is_used_once(tmp_path: Path) -> None:
    store = ConsentStore(tmp_path / "consent.json")
    request = store.ask_later("Claude", "a", "t", ())
    once = store.decide(request.id, Answer.ONCE)
    assert once.once
    assert ConsentStore(store.path).use(once.id) is True
    assert store.use(once.id) is False  # another process used it first
    assert store.decisions() == ()


def test_a_damaged_file_is_kept_aside_and_read_as_empty(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "consent.json"
    path.write_text('{"decisions": [{"id": 1}]', "utf-8")
    store = ConsentStore(path)
    assert store.decisions() == ()
    assert "is damaged" in caplog.text
    granted = store.allow("a")
    assert ConsentStore(path).decisions() == (granted,)
    aside = [p for p in tmp_path.iterdir() if ".damaged-" in p.name]
    assert len(aside) == 1
    assert aside[0].read_text("utf-8") == '{"decisions": [{"id": 1}]'


def test_unknown_decisions_are_refused(tmp_path: Path) -> None:
    store = ConsentStore(tmp_path / "consent.json")
    with pytest.raises(ValueError, match="allow or deny"):
        store.store("a", "ask")
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"decisions": [{"id": "x", "app": "a", "decision": "maybe"}]}), "utf-8")
    assert ConsentStore(path).decisions() == ()
