"""`outdated` and `update` through the installed command: a newer version in a store served over loopback
HTTP, and a newer bundled version (an installed older copy stands for what a package upgrade leaves)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from aai_gateway.library.entries import bundled
from aai_gateway.library.store import publish
from tests.library.test_store import add_entry, cli, home_with, served

DBUS = "org.freedesktop.dbus"
HOSTNAME = "org.freedesktop.hostname1"


def bundled_doc(app_id: str) -> dict[str, object]:
    entry = bundled().get(app_id)
    assert entry is not None
    assert entry.data is not None
    doc: dict[str, object] = json.loads(entry.data)
    return doc


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A store whose org.freedesktop.dbus is 2.0.0: one tool added, one changed, one removed."""
    root = tmp_path_factory.mktemp("store")
    publish([], root, "newer store")
    doc = bundled_doc(DBUS)
    tools = doc["tools"]
    assert isinstance(tools, list)
    tools[0] = tools[0] | {"description": tools[0]["description"] + " Sorted."}
    tools.append(tools[1] | {"name": "list_queued_owners"})
    del tools[2]  # name_has_owner
    doc["version"] = "2.0.0"
    add_entry(root, DBUS, json.dumps(doc).encode(), version="2.0.0")
    with served(root) as base:
        yield f"{base}/index.json"


def test_a_newer_store_version_is_listed_and_updated_with_its_tool_changes(tmp_path: Path, store: str) -> None:
    assert cli(home_with(tmp_path, []), "install", DBUS).returncode == 0  # the bundled 1.0.0
    env = home_with(tmp_path, [store])
    target = Path(env["HOME"]) / ".aai" / DBUS / "aai.json"
    before = target.read_bytes()

    listed = cli(env, "outdated")
    assert listed.returncode == 0, listed.stderr
    assert f"{DBUS}  1.0.0 -> 2.0.0  (store newer store)" in listed.stdout
    as_json = json.loads(cli(env, "outdated", "--json").stdout)
    assert as_json == [{"id": DBUS, "installed": "1.0.0", "available": "2.0.0", "source": store}]
    assert target.read_bytes() == before  # listing changes nothing

    done = cli(env, "update")
    assert done.returncode == 0, done.stderr
    assert f"Updated {DBUS} from 1.0.0 to 2.0.0: {target}" in done.stdout
    assert "  added: list_queued_owners\n  changed: list_names\n  removed: name_has_owner\n" in done.stdout
    assert json.loads(target.read_text())["version"] == "2.0.0"
    record = json.loads((target.parent.parent / "installed.json").read_text())[DBUS]
    assert record["version"] == "2.0.0"
    assert record["source"].endswith(f"/apps/{DBUS}/aai.json")
    assert "Every installed app is up to date" in cli(env, "outdated").stdout
    again = cli(env, "update", DBUS)
    assert again.returncode == 1
    assert f"{DBUS} has no newer version; nothing to update" in again.stderr


def test_a_newer_bundled_version_needs_update_and_an_edited_copy_needs_force(tmp_path: Path) -> None:
    env = home_with(tmp_path, [])
    aai = Path(env["HOME"]) / ".aai"
    now = bundled_doc(HOSTNAME)["version"]
    older = bundled_doc(HOSTNAME) | {"version": "0.9.0"}
    tools = older["tools"]
    assert isinstance(tools, list)
    older["tools"] = tools[:-1]  # the older copy lacked set_static_hostname
    (tmp_path / "old.json").write_text(json.dumps(older))
    assert cli(env, "install", str(tmp_path / "old.json")).returncode == 0
    target = aai / HOSTNAME / "aai.json"

    # What the package ships never rewrites an installed copy by itself: serving and listing leave it.
    cli(env, "--scan")
    cli(env, "library", "hostname")
    assert json.loads(target.read_text())["version"] == "0.9.0"
    assert f"{HOSTNAME}  0.9.0 -> {now}  (bundled)" in cli(env, "outdated").stdout

    edited = target.read_text().replace("0.9.0", "0.9.1")
    target.write_text(edited)
    refused = cli(env, "update", HOSTNAME)
    assert refused.returncode == 1
    assert f"{HOSTNAME} was not updated: {target} was changed since it was installed" in refused.stderr
    assert "--force" in refused.stderr
    assert target.read_text() == edited

    forced = cli(env, "update", "--force", HOSTNAME)
    assert forced.returncode == 0, forced.stderr
    assert f"Updated {HOSTNAME} from 0.9.1 to {now} (your edited copy is kept in " in forced.stdout
    assert "  added: set_static_hostname\n" in forced.stdout
    backups = [p for p in target.parent.iterdir() if p.name != "aai.json"]
    assert [p.read_text() for p in backups] == [edited]
    assert json.loads(target.read_text())["version"] == now


def test_update_names_what_it_cannot_update(tmp_path: Path) -> None:
    env = home_with(tmp_path, [])
    missing = cli(env, "update", "org.example.nothing", DBUS)
    assert missing.returncode == 1
    assert "org.example.nothing is not in the library or a store; nothing to update" in missing.stderr
    assert f"{DBUS} is not installed; nothing to update" in missing.stderr
