"""Descriptor verdicts kept across scans: trusted only for the exact bytes that earned them."""

from __future__ import annotations

import json
import os
from pathlib import Path

from aai_gateway.config import Settings, load_settings
from aai_gateway.descriptor.validate import rules_fingerprint
from aai_gateway.discovery import scan
from aai_gateway.discovery.checked import FOLDER
from tests.support import TEST_APPS, install_descriptor


def settings(home: Path) -> Settings:
    return load_settings({"HOME": str(home), "AAI_PLATFORM": "linux"})


def verdicts(home: Path) -> Path:
    return home / ".cache" / "aai-gateway" / FOLDER / f"{rules_fingerprint()}.json"


def echo_home(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path, install_descriptor(tmp_path / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")


def test_a_rescan_gives_the_same_apps_and_warnings(tmp_path: Path) -> None:
    home, path = echo_home(tmp_path)
    doc = json.loads(path.read_text())
    doc["platforms"]["linux"]["tools"][0]["description"] = ""
    path.write_text(json.dumps(doc))
    first = scan(settings(home))
    assert verdicts(home).exists()
    again = scan(settings(home))
    assert again.apps == first.apps
    assert again.problems == first.problems
    assert any("has no description" in p.message for p in again.problems)


def test_a_kept_verdict_serves_only_the_bytes_it_was_given_for(tmp_path: Path) -> None:
    home, path = echo_home(tmp_path)
    scan(settings(home))
    stored = json.loads(verdicts(home).read_text())
    stored[str(path)][3] = [["", "kept verdict"]]
    verdicts(home).write_text(json.dumps(stored))
    assert [p.message for p in scan(settings(home)).problems] == ["kept verdict"]

    info = path.stat()
    text = path.read_text()
    broken = text.replace('"type": "string"', '"type": "strung"', 1)
    assert len(broken) == len(text)
    path.write_text(broken)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    result = scan(settings(home))
    assert "dev.aai.echo" not in result.apps
    assert any("strung" in str(p) for p in result.errors)


def test_a_damaged_or_unwritable_store_only_costs_a_full_check(tmp_path: Path) -> None:
    home, _ = echo_home(tmp_path)
    verdicts(home).parent.mkdir(parents=True)
    verdicts(home).write_text('{"not": "an entry"')
    assert list(scan(settings(home)).apps) == ["dev.aai.echo"]
    assert json.loads(verdicts(home).read_text()).keys() == {str(home / ".aai" / "dev.aai.echo" / "aai.json")}

    other = tmp_path / "other"
    install_descriptor(other / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    (other / ".cache").mkdir()
    (other / ".cache" / "aai-gateway").write_text("a file where the cache folder should be")
    assert list(scan(settings(other)).apps) == ["dev.aai.echo"]


def test_verdicts_of_other_rules_are_dropped(tmp_path: Path) -> None:
    home, _ = echo_home(tmp_path)
    stale = verdicts(home).parent / "0123456789abcdef.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}")
    scan(settings(home))
    assert sorted(p.name for p in stale.parent.iterdir()) == [verdicts(home).name]


def test_a_rescan_keeps_what_an_unchanged_file_loaded_and_rereads_a_changed_one(tmp_path: Path) -> None:
    home, path = echo_home(tmp_path)
    other = home / ".aai" / "dev.aai.other" / "aai.json"
    other.parent.mkdir()
    other.write_text(json.dumps(json.loads(path.read_text()) | {"appId": "dev.aai.other"}))
    first = scan(settings(home))
    again = scan(settings(home), first)
    assert again.apps["dev.aai.echo"] is first.apps["dev.aai.echo"]
    assert again.apps["dev.aai.other"] is first.apps["dev.aai.other"]
    assert again.problems == first.problems

    # Same size and modification time, other bytes: the content decides, not the file's times.
    info = path.stat()
    text = path.read_text()
    renamed = text.replace('"echo"', '"ECHO"', 1)
    assert len(renamed) == len(text)
    assert renamed != text
    path.write_text(renamed)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    third = scan(settings(home), again)
    assert third.apps["dev.aai.echo"] is not again.apps["dev.aai.echo"]
    assert third.apps["dev.aai.echo"].to_json() != again.apps["dev.aai.echo"].to_json()
    assert third.apps["dev.aai.other"] is again.apps["dev.aai.other"]

    # A file that breaks is read again, and its last good version keeps serving.
    path.write_text('{"broken": ')
    fourth = scan(settings(home), third)
    assert fourth.apps["dev.aai.echo"] is third.apps["dev.aai.echo"]
    assert any("last good version" in p.message for p in fourth.problems)
    other.unlink()
    assert "dev.aai.other" not in scan(settings(home), fourth).apps
