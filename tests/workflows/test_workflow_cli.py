"""`aai-gateway workflow list|run|validate|examples` and `validate PATH` of a workflow file, through the
installed command; runs call the echo test app on a private session bus."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support import Bus
from tests.workflows.common import BROKEN, ECHO_TWICE, FAILING, cli, home_env, workflows_home

pytestmark = pytest.mark.e2e


def test_list_shows_each_workflow_with_its_inputs_and_steps_and_the_broken_files(tmp_path: Path) -> None:
    folder = workflows_home(tmp_path / "home", {"echo-twice": ECHO_TWICE, "broken": BROKEN})
    env = {"HOME": str(tmp_path / "home"), "AAI_PLATFORM": "linux", "PATH": "/usr/bin:/bin"}
    listed = cli(env, "workflow", "list")
    assert listed.returncode == 0, listed.stderr
    out = listed.stdout
    assert "echo-twice  Echo and add  (2 steps: dev.aai.echo:echo, dev.aai.echo:add)" in out
    assert "inputs: text (string; required), count (integer; default 2), loud (boolean)" in out
    assert f"!! {folder / 'broken.json'}#/steps/0/args/t: reads inputs.x, which inputs does not declare" in out

    as_json = json.loads(cli(env, "workflow", "list", "--json").stdout)
    (only,) = as_json["workflows"]
    assert only["id"] == "echo-twice"
    assert only["inputs"][0] == {"name": "text", "type": "string", "required": True}
    assert only["inputs"][1] == {"name": "count", "type": "integer", "required": False, "default": 2}
    assert [s["tool"] for s in only["steps"]] == ["echo", "add"]
    assert as_json["broken"]["broken"][0]["pointer"] == "/steps/0/args/t"


def test_run_types_key_value_pairs_by_the_inputs_schema_and_prints_steps_and_output(
    bus: Bus, echo_app: None, tmp_path: Path
) -> None:
    workflows_home(tmp_path / "home", {"echo-twice": ECHO_TWICE})
    env = home_env(bus, tmp_path / "home")
    ran = cli(env, "workflow", "run", "echo-twice", "text=hello", "count=4", "loud=yes")
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {"said": "hello", "sum": 5, "loud": True}
    assert "- said (dev.aai.echo:echo): ok" in ran.stderr
    assert "- sum (dev.aai.echo:add): ok" in ran.stderr

    again = cli(env, "workflow", "run", "echo-twice", '{"text": "hi"}')  # count's default, 2
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == {"said": "hi", "sum": 3, "loud": None}

    whole = json.loads(cli(env, "workflow", "run", "echo-twice", "text=x", "--json").stdout)
    assert whole["status"] == "ok"
    assert [s["status"] for s in whole["steps"]] == ["ok", "ok"]

    history = json.loads(cli(env, "history", "--app", "aai.workflows", "--json").stdout)
    assert [(r["tool"], r["caller"], r["status"]) for r in history] == [("echo-twice", "cli", "ok")] * 3


def test_a_failing_step_exits_1_saying_how_each_step_ended(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    workflows_home(tmp_path / "home", {"fails": FAILING})
    ran = cli(home_env(bus, tmp_path / "home"), "workflow", "run", "fails", "why=the disk is full")
    assert ran.returncode == 1
    assert ran.stdout == ""
    assert "[-32001 AUTOMATION_FAILED]" in ran.stderr
    assert "- first (dev.aai.echo:echo): ok" in ran.stderr
    assert "- boom (dev.aai.echo:fail): failed" in ran.stderr
    assert "the disk is full" in ran.stderr


@pytest.mark.hostile("validation")
@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (["count=many", "text=a"], 2, "ARGS: count: must be a whole number, got many"),
        (["loud=perhaps", "text=a"], 2, "ARGS: loud: must be true or false, got perhaps"),
        (["text"], 2, "is neither a JSON object nor key=value"),
        (['{"text": '], 2, "ARGS: Expecting value at line 1 column 10"),
        (["[1, 2]"], 2, "is neither a JSON object nor key=value"),
        (['{"text": ' + "[" * 50_000 + "]" * 50_000 + "}"], 2, "ARGS: is nested too deeply"),
        ([], 1, "INVALID_PARAMS"),  # text is required
        (['{"text": 5}'], 1, "INVALID_PARAMS"),
    ],
    ids=["integer", "boolean", "no-equals", "bad-json", "array", "deep", "missing", "wrong-type"],
)
@pytest.mark.usefixtures("echo_app")
def test_bad_arguments_are_refused_before_anything_runs(
    bus: Bus, tmp_path: Path, args: list[str], code: int, said: str
) -> None:
    workflows_home(tmp_path / "home", {"echo-twice": ECHO_TWICE})
    env = home_env(bus, tmp_path / "home")
    ran = cli(env, "workflow", "run", "echo-twice", *args)
    assert ran.returncode == code, ran.stderr
    assert said in ran.stderr
    assert bus.echo_calls() == 0


@pytest.mark.hostile("validation")
def test_an_unknown_workflow_is_named_with_those_there_are(bus: Bus, tmp_path: Path) -> None:
    workflows_home(tmp_path / "home", {"echo-twice": ECHO_TWICE})
    ran = cli(home_env(bus, tmp_path / "home"), "workflow", "run", "echo-twise", "text=a")
    assert ran.returncode == 1
    assert "echo-twice" in ran.stderr


def test_validate_checks_the_folder_or_the_files_given_with_pointers(tmp_path: Path) -> None:
    folder = workflows_home(tmp_path / "home", {"echo-twice": ECHO_TWICE})
    env = {"HOME": str(tmp_path / "home"), "AAI_PLATFORM": "linux", "PATH": "/usr/bin:/bin"}
    good = cli(env, "workflow", "validate")
    assert good.returncode == 0, good.stdout
    assert f"ok  {folder / 'echo-twice.json'}: workflow echo-twice (Echo and add; 2 steps)" in good.stdout
    assert "1 valid, 0 invalid" in good.stdout

    (folder / "broken.json").write_text(json.dumps(BROKEN))
    bad = cli(env, "workflow", "validate")
    assert bad.returncode == 1
    assert f"!! {folder / 'broken.json'}#/steps/0/args/t: reads inputs.x, which inputs does not declare" in bad.stdout
    assert "1 valid, 1 invalid" in bad.stdout

    found = json.loads(cli(env, "workflow", "validate", "--json", str(folder / "broken.json")).stdout)
    assert found == [
        {
            "file": str(folder / "broken.json"),
            "valid": False,
            "workflow": None,
            "problems": [
                {
                    "file": str(folder / "broken.json"),
                    "pointer": "/steps/0/args/t",
                    "message": "reads inputs.x, which inputs does not declare",
                    "severity": "error",
                }
            ],
        }
    ]


@pytest.mark.hostile("validation")
@pytest.mark.parametrize(
    ("name", "content", "said"),
    [
        ("not-json.json", b"{", "is not JSON"),
        ("huge.json", b'{"name": "' + b"x" * 1_000_001 + b'"}', "is larger than 1,000,000 bytes"),
        ("deep.json", b"[" * 100_000 + b"]" * 100_000, ""),
        ("Bad Name.json", json.dumps(ECHO_TWICE).encode(), "'Bad Name' is no workflow id"),
        ("no-steps.json", b'{"name": "x", "steps": []}', "#/steps: "),
        ("stray-key.json", json.dumps(ECHO_TWICE | {"tools": []}).encode(), "unknown field 'tools'"),
        ("bad-step.json", b'{"name": "x", "steps": [{"id": "1a", "app": "a", "tool": "t"}]}', "#/steps/0/id: "),
        (
            "cycle.json",
            json.dumps(
                {
                    "name": "c",
                    "steps": [
                        {"id": "a", "app": "x", "tool": "t", "args": {"v": "${steps.b.result}"}},
                        {"id": "b", "app": "x", "tool": "t", "args": {"v": "${steps.a.result}"}},
                    ],
                }
            ).encode(),
            "in a cycle",
        ),
        (
            "bad-query.json",
            b'{"name": "x", "steps": [{"id": "a", "app": "x", "tool": "t", "args": {"v": "${[}"}}]}',
            "#/steps/0/args: ",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) and v.endswith(".json") else "",
)
def test_validate_says_what_is_wrong_with_a_bad_file_and_where(
    tmp_path: Path, name: str, content: bytes, said: str
) -> None:
    folder = workflows_home(tmp_path / "home", {})
    (folder / name).write_bytes(content)
    env = {"HOME": str(tmp_path / "home"), "AAI_PLATFORM": "linux", "PATH": "/usr/bin:/bin"}
    checked = cli(env, "workflow", "validate")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert f"!! {folder / name}" in checked.stdout
    assert said in checked.stdout
    assert "0 valid, 1 invalid" in checked.stdout
    assert len(checked.stdout) < 10_000


@pytest.mark.hostile("validation")
def test_a_fifo_among_the_workflows_is_reported_not_waited_on(tmp_path: Path) -> None:
    folder = workflows_home(tmp_path / "home", {"echo-twice": ECHO_TWICE})
    os.mkfifo(folder / "pipe.json")
    env = {"HOME": str(tmp_path / "home"), "AAI_PLATFORM": "linux", "PATH": "/usr/bin:/bin"}
    checked = cli(env, "workflow", "validate")
    assert checked.returncode == 1
    assert f"!! {folder / 'pipe.json'}: is not a regular file" in checked.stdout
    listed = cli(env, "workflow", "list")
    assert listed.returncode == 0
    assert "echo-twice  Echo and add" in listed.stdout
    assert f"!! {folder / 'pipe.json'}: is not a regular file" in listed.stdout
    assert cli(env, "validate", str(folder)).returncode == 1


def test_validate_path_checks_a_workflow_file_as_a_workflow(tmp_path: Path) -> None:
    folder = workflows_home(tmp_path / "home", {"echo-twice": ECHO_TWICE, "broken": BROKEN})
    elsewhere = tmp_path / "mine.json"
    elsewhere.write_text(json.dumps(ECHO_TWICE))  # steps and no tools: a workflow wherever it is
    env = {"HOME": str(tmp_path / "home"), "AAI_PLATFORM": "linux", "PATH": "/usr/bin:/bin"}
    checked = cli(env, "validate", str(folder), str(elsewhere))
    assert checked.returncode == 1
    assert f"ok  {folder / 'echo-twice.json'}: workflow echo-twice" in checked.stdout
    assert f"ok  {elsewhere}: workflow mine" in checked.stdout
    assert f"!! {folder / 'broken.json'}#/steps/0/args/t: reads inputs.x" in checked.stdout
    assert "2 valid, 1 invalid" in checked.stdout

    alone = cli(env, "validate", "--json", str(elsewhere))
    assert alone.returncode == 0, alone.stdout
    assert json.loads(alone.stdout) == [{"file": str(elsewhere), "valid": True, "workflow": "mine", "problems": []}]


def test_examples_are_listed_and_installed_without_overwriting(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home"), "AAI_PLATFORM": "linux", "PATH": "/usr/bin:/bin"}
    listed = cli(env, "workflow", "examples")
    assert listed.returncode == 0, listed.stderr
    for workflow_id in ("now-playing", "quiet-time", "save-power"):
        assert f"\n{workflow_id}  " in f"\n{listed.stdout}"
    assert "below (number; default 20)" in listed.stdout
    folder = tmp_path / "home" / ".aai" / "workflows"
    assert not folder.exists()

    folder.mkdir(parents=True)
    (folder / "save-power.json").write_text("my own edit")
    installed = cli(env, "workflow", "examples", "--install")
    assert installed.returncode == 0, installed.stderr
    assert f"installed now-playing: {folder / 'now-playing.json'}" in installed.stdout
    assert f"kept save-power: {folder / 'save-power.json'} is already there" in installed.stdout
    assert (folder / "save-power.json").read_text() == "my own edit"
    assert sorted(p.name for p in folder.iterdir()) == ["now-playing.json", "quiet-time.json", "save-power.json"]

    again = cli(env, "workflow", "examples", "--install")
    assert "installed" not in again.stdout.split("\n\n", 1)[1] if "\n\n" in again.stdout else True
    assert f"kept now-playing: {folder / 'now-playing.json'}" in again.stdout
    valid = cli(env, "workflow", "validate", str(folder / "now-playing.json"), str(folder / "quiet-time.json"))
    assert valid.returncode == 0, valid.stdout
