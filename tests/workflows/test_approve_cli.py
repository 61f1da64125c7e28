"""`aai-gateway workflow approve` and `revoke` through the installed command: the approval names every tool
the workflow may run (its steps and their declared undos) and every trigger, and an edit withdraws it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from aai_gateway.config import load_settings
from aai_gateway.workflows.approvals import Approvals
from aai_gateway.workflows.saved import Shelf
from tests.library.library_gateway import library_home
from tests.support import gateway_command

QUIET = {
    "name": "Quiet at night",
    "on": [{"at": "daily 22:30"}],
    "steps": [{"id": "quiet", "app": "org.dunstproject.dunst", "tool": "set_do_not_disturb", "args": {"on": True}}],
}


def cli(home: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "AAI_PLATFORM": "linux"}
    return subprocess.run(
        [gateway_command(), *args], env=env, input=stdin, capture_output=True, text=True, timeout=60, check=False
    )


def test_approval_names_tools_and_triggers_and_an_edit_withdraws_it(tmp_path: Path) -> None:
    home = library_home(tmp_path / "home", "org.dunstproject.dunst")
    folder = home / ".aai" / "workflows"
    folder.mkdir(parents=True)
    (folder / "quiet.json").write_text(json.dumps(QUIET))
    listed = cli(home, "workflow", "list")
    assert "starts on: at 22:30 on mon,tue,wed,thu,fri,sat,sun" in listed.stdout
    refused = cli(home, "workflow", "approve", "quiet", stdin="n\n")
    assert refused.returncode == 1
    assert "org.dunstproject.dunst:set_do_not_disturb" in refused.stdout
    assert "org.dunstproject.dunst:do_not_disturb" in refused.stdout  # the read its declared undo needs
    assert "Not approved." in refused.stdout

    def approved() -> bool:
        shelf = Shelf(home / ".aai" / "workflows")
        shelf.load()
        saved = shelf.get("quiet")
        assert saved is not None
        return Approvals(load_settings({"HOME": str(home)}).aai_home).current(saved) is not None

    assert not approved()
    done = cli(home, "workflow", "approve", "quiet", "--yes")
    assert done.returncode == 0, done.stderr
    assert approved()
    (folder / "quiet.json").write_text(json.dumps({**QUIET, "on": [{"at": "daily 21:00"}]}))
    assert not approved()
    assert cli(home, "workflow", "approve", "quiet", "--yes").returncode == 0
    assert approved()
    assert "no longer start it" in cli(home, "workflow", "revoke", "quiet").stdout
    assert not approved()


@pytest.mark.hostile("validation")
def test_a_workflow_without_triggers_or_a_bad_timer_is_not_approved(tmp_path: Path) -> None:
    home = library_home(tmp_path / "home", "org.dunstproject.dunst")
    folder = home / ".aai" / "workflows"
    folder.mkdir(parents=True)
    (folder / "plain.json").write_text(json.dumps({k: v for k, v in QUIET.items() if k != "on"}))
    (folder / "bad.json").write_text(json.dumps({**QUIET, "on": [{"at": "at teatime"}]}))
    plain = cli(home, "workflow", "approve", "plain", "--yes")
    assert plain.returncode != 0
    assert "has no triggers" in plain.stderr
    bad = cli(home, "workflow", "validate")
    assert bad.returncode == 1
    assert "bad.json#/on/0" in bad.stdout
    assert "is no time of day" in bad.stdout
