"""Installing into an AAI home: written whole, updated when untouched, never over an edit without force."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from aai_gateway.errors import AaiJsonInvalid
from aai_gateway.library.install import BACKUP, RECORD, EditedFile, install
from tests.support import ROOT, TEST_APPS, gateway_command

ECHO = TEST_APPS / "dev.aai.echo" / "aai.json"


def version(data: bytes, value: str) -> bytes:
    doc = json.loads(data)
    doc["version"] = value
    return json.dumps(doc).encode()


def test_install_update_and_an_edited_file(tmp_path: Path) -> None:
    data = ECHO.read_bytes()
    first = install(data, "test", tmp_path)
    target = tmp_path / "dev.aai.echo" / "aai.json"
    assert (first.outcome, first.path, target.read_bytes()) == ("installed", target, data)
    assert install(data, "test", tmp_path).outcome == "unchanged"

    newer = version(data, "1.1.0")
    assert install(newer, "test", tmp_path).outcome == "updated"
    assert target.read_bytes() == newer

    edited = newer.replace(b"echoes", b"repeats")
    target.write_bytes(edited)
    with pytest.raises(EditedFile, match="was changed since it was installed"):
        install(data, "test", tmp_path)
    assert target.read_bytes() == edited
    forced = install(data, "test", tmp_path, force=True)
    assert (forced.outcome, forced.backup) == ("replaced", target.parent / BACKUP)
    assert (target.read_bytes(), (target.parent / BACKUP).read_bytes()) == (data, edited)
    record = json.loads((tmp_path / RECORD).read_text())["dev.aai.echo"]
    assert (record["sha256"], record["version"]) == (hashlib.sha256(data).hexdigest(), "1.0.0")


def test_a_file_put_there_by_hand_is_not_replaced(tmp_path: Path) -> None:
    target = tmp_path / "dev.aai.echo" / "aai.json"
    target.parent.mkdir()
    target.write_bytes(version(ECHO.read_bytes(), "0.9.0"))
    with pytest.raises(EditedFile, match="was not installed by aai-gateway"):
        install(ECHO.read_bytes(), "test", tmp_path)


def test_an_invalid_descriptor_writes_nothing(tmp_path: Path) -> None:
    doc = json.loads(ECHO.read_text())
    del doc["platforms"]
    with pytest.raises(AaiJsonInvalid, match="is not a valid descriptor"):
        install(json.dumps(doc).encode(), "bad.json", tmp_path)
    assert list(tmp_path.iterdir()) == []


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(home), "AAI_PLATFORM": "linux", "PATH": "/usr/bin:/bin"}
    return subprocess.run([gateway_command(), *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def test_the_command_names_near_ids_refuses_edits_and_installs_files(tmp_path: Path) -> None:
    unknown = cli(tmp_path, "install", "org.freedesktop.dbsu")
    assert unknown.returncode == 1
    assert "the library has no entry 'org.freedesktop.dbsu'; did you mean org.freedesktop.dbus" in unknown.stderr

    assert cli(tmp_path, "install", str(ECHO)).returncode == 0
    target = tmp_path / ".aai" / "dev.aai.echo" / "aai.json"
    target.write_text(target.read_text().replace("echoes", "repeats"))
    again = cli(tmp_path, "install", str(ECHO))
    assert again.returncode == 1
    assert f"{target} was changed since it was installed; it is left as it is (--force replaces it" in again.stderr
    forced = cli(tmp_path, "install", str(ECHO), "--force")
    assert forced.returncode == 0, forced.stderr
    assert f"(the old one is in {target.parent / BACKUP})" in forced.stdout
    assert target.read_bytes() == ECHO.read_bytes()

    broken = tmp_path / "broken.json"
    broken.write_text('{"appId": "x.y"}')
    invalid = cli(tmp_path, "install", str(broken))
    assert invalid.returncode == 1
    assert f"{broken} is not a valid descriptor:" in invalid.stderr
    missing = cli(tmp_path, "install", str(tmp_path / "none.json"))
    assert missing.returncode == 1
    assert "none.json" in missing.stderr


def test_an_id_is_an_id_even_beside_a_folder_of_that_name(tmp_path: Path) -> None:
    (tmp_path / "org.freedesktop.dbus").mkdir()
    env = {"HOME": str(tmp_path), "AAI_PLATFORM": "linux", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [gateway_command(), "install", "org.freedesktop.dbus"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / ".aai" / "org.freedesktop.dbus" / "aai.json").is_file()


def test_the_command_prints_the_docs_table_and_publishes_a_store(tmp_path: Path) -> None:
    table = cli(tmp_path, "library", "--table")
    assert table.stdout == (ROOT / "docs" / "library.md").read_text("utf-8")
    published = cli(tmp_path, "library", "--publish", str(tmp_path / "store"), "--name", "Team")
    assert published.returncode == 0, published.stderr
    index = json.loads((tmp_path / "store" / "index.json").read_text("utf-8"))
    assert index["store"] == {"name": "Team", "formatVersion": 1}
    for entry in index["entries"]:
        data = (tmp_path / "store" / entry["descriptorUrl"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]


def test_install_lists_each_tools_parameters_with_their_types_and_which_are_required(tmp_path: Path) -> None:
    done = cli(tmp_path, "install", "org.freedesktop.notifications")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    after = {lines[i].split(":")[0].strip(): lines[i + 1] for i in range(len(lines) - 1)}
    assert after["close_notification"] == "    parameters: id (integer, required)"
    assert after["get_capabilities [read-only]"] == "    parameters: no parameters"
    notify = after["notify"]
    assert notify.startswith("    parameters: app_name (string, optional), replaces_id (integer, optional), ")
    assert "summary (string, required)" in notify
    assert "actions (array of string, optional)" in notify
