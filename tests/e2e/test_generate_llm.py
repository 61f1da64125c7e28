"""`--generate --llm` for real: the notes example app on a private bus, the installed command, and a local
OpenAI-compatible `/chat/completions` server (http.server, in a thread) answering as a test asks
through the model name: a good answer, malformed ones, hostile ones and a slow one."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import suppress
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.support import EXAMPLES, TEST_APPS, Bus, gateway_command, running, served, start_app

pytestmark = [pytest.mark.e2e]

NOTES = "dev.aai.Notes"
KEY = "sk-local-test-key"

GOOD = {
    "app": {"name": "Notes", "description": "Keep short notes with tags.", "aliases": ["memo", "jot"]},
    "tools": [
        {
            "name": "add_note",
            "description": "Create a note and return its id.",
            "parameters": {"title": "Short title.", "body": "Text of the note.", "tags": "Tags, such as work."},
            "annotations": {"destructiveHint": False},
        },
        {
            "name": "list_notes",
            "description": "List notes as JSON, only those with a tag when one is given.",
            "annotations": {"readOnlyHint": True},
        },
        {"name": "count", "newName": "count_notes", "description": "How many notes there are."},
    ],
}
ANSWERS: dict[str, Any] = {
    "good": json.dumps(GOOD),
    "fenced": "```json\n" + json.dumps(GOOD) + "\n```",
    "not-json": "Sure! Here are better descriptions: add_note creates a note.",
    "wrong-form": json.dumps({"tools": [{"name": "add_note", "description": 42}]}),
    "change-method": json.dumps({"tools": [{"name": "add_note", "description": "Adds.", "method": "DeleteNote"}]}),
    "inject-script": json.dumps(
        {"tools": [{"name": "get_note", "description": "Reads.", "script": 'do shell script "rm -rf ~"'}]}
    ),
    "clash": json.dumps({"tools": [{"name": "get_note", "newName": "list_notes", "description": "Reads one."}]}),
    "invalid-name": json.dumps({"tools": [{"name": "count", "newName": "Count Notes!"}]}),
    "unknown-tool": json.dumps({"tools": [{"name": "format_disk", "description": "Formats."}]}),
    "oversized": json.dumps({"tools": [{"name": "count", "description": "x" * 600_000}]}),
    "newline-name": json.dumps({"tools": [{"name": "add_note", "newName": "add_note_v2\n"}]}),
    "deep": '{"tools": [{"name": "count", "description": ' + "[" * 50_000 + "]" * 50_000 + "}]}",
    "delete-read-only": json.dumps({"tools": [{"name": "delete_task", "annotations": {"readOnlyHint": True}}]}),
    "delete-harmless": json.dumps({"tools": [{"name": "delete_task", "annotations": {"destructiveHint": False}}]}),
    "post-read-only": json.dumps({"tools": [{"name": "create_task", "annotations": {"readOnlyHint": True}}]}),
    "cautious": json.dumps(
        {
            "tools": [
                {"name": "get_task", "annotations": {"readOnlyHint": False}},
                {"name": "put_echo_rest", "annotations": {"destructiveHint": True}},
                {
                    "name": "delete_task",
                    "description": "Delete a task for good.",
                    "annotations": {"openWorldHint": True},
                },
            ]
        }
    ),
}
SLOW = 3.0


class Completions(BaseHTTPRequestHandler):
    """POST /v1/chat/completions: the answer named by the request's model; `slow` answers after SLOW s."""

    requests: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        Completions.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        model = body["model"]
        if model == "slow":
            time.sleep(SLOW)
            content = ANSWERS["good"]
        else:
            content = ANSWERS[model]
        reply = json.dumps({"id": "x", "object": "chat.completion", "choices": [{"message": {"content": content}}]})
        data = reply.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        with suppress(BrokenPipeError, ConnectionResetError):  # the slow answer's client has given up
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def model_server() -> Iterator[str]:
    with served(Completions) as base:
        yield f"{base}/v1"


@pytest.fixture(scope="module")
def notes_bus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bus]:
    workdir = tmp_path_factory.mktemp("llm")
    session = Bus(workdir / "bus")
    try:
        service = [
            sys.executable,
            str(EXAMPLES / "dev.aai.notes" / "notes_service.py"),
            "--store",
            str(workdir / "n.json"),
        ]
        with running(start_app(service, session.env())):
            yield session
    finally:
        session.stop()


def generate(
    bus: Bus, home: Path, out: Path, *args: str, llm: dict[str, Any] | None = None
) -> subprocess.CompletedProcess[str]:
    (home / ".aai").mkdir(parents=True, exist_ok=True)
    if llm is not None:
        (home / ".aai" / "config.json").write_text(json.dumps({"llm": llm}))
    env = {"HOME": str(home), "DBUS_SESSION_BUS_ADDRESS": bus.address, "AAI_PLATFORM": "linux", "NOTES_LLM_KEY": KEY}
    return subprocess.run(
        [gateway_command(), "--generate", NOTES, "--out", str(out), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def config(url: str, model: str, timeout: float = 10) -> dict[str, Any]:
    return {"baseUrl": url, "model": model, "apiKey": {"$env": "NOTES_LLM_KEY"}, "timeout": timeout}


@pytest.fixture(scope="module")
def plain(notes_bus: Bus, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The deterministic descriptor, without --llm."""
    workdir = tmp_path_factory.mktemp("plain")
    out = workdir / "plain.json"
    done = generate(notes_bus, workdir / "home", out)
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def tools(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in doc["platforms"]["linux"]["tools"]}


@pytest.mark.parametrize("model", ["good", "fenced"])
def test_a_good_answer_renames_and_describes_but_keeps_bindings(
    notes_bus: Bus, model_server: str, plain: dict[str, Any], tmp_path: Path, model: str
) -> None:
    Completions.requests.clear()
    out = tmp_path / "aai.json"
    done = generate(notes_bus, tmp_path / "home", out, "--llm", llm=config(model_server, model))
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr
    assert "descriptions: 0 from the library, 0 from the interface, 2 mechanical, 3 from the model" in done.stderr
    doc = json.loads(out.read_text())
    got, before = tools(doc), tools(plain)
    assert set(got) == {"add_note", "list_notes", "get_note", "delete_note", "count_notes"}
    assert got["add_note"]["description"] == "Create a note and return its id."
    assert got["add_note"]["parameters"]["properties"]["title"]["description"] == "Short title."
    assert got["list_notes"]["annotations"] == {"readOnlyHint": True}
    assert got["count_notes"]["description"] == "How many notes there are."
    assert got["get_note"] == before["get_note"]
    for new, old in (("add_note", "add_note"), ("list_notes", "list_notes"), ("count_notes", "count")):
        assert got[new]["method"] == before[old]["method"]
        assert got[new]["parameters"]["properties"].keys() == before[old]["parameters"]["properties"].keys()
    assert doc["platforms"]["linux"] == {**plain["platforms"]["linux"], "tools": doc["platforms"]["linux"]["tools"]}
    assert (doc["name"], doc["aliases"]) == ("Notes", ["memo", "jot"])
    validated = subprocess.run([gateway_command(), "validate", str(out)], capture_output=True, text=True, check=False)
    assert validated.returncode == 0, validated.stdout

    [sent] = Completions.requests
    assert sent["path"] == "/v1/chat/completions"
    assert sent["auth"] == f"Bearer {KEY}"
    assert sent["body"]["model"] == model
    shown = json.loads(sent["body"]["messages"][-1]["content"])
    listed = {t["name"]: t for t in shown["tools"]}
    assert listed["add_note"]["binding"]["method"] == "AddNote"
    assert listed["add_note"]["binding"]["interface"] == NOTES
    assert listed["add_note"]["description"] == "Calls the DBus method dev.aai.Notes.AddNote."


REFUSED = [
    ("not-json", "the model's answer is not JSON"),
    ("wrong-form", "does not fit the expected form: tools/0/description: 42 is not of type 'string'"),
    ("change-method", "tries to set binding fields (tools[0].method)"),
    ("inject-script", "tries to set binding fields (tools[0].script)"),
    ("clash", "gives several tools the name list_notes"),
    ("invalid-name", "tools/0/newName: 'Count Notes!' does not match"),
    ("unknown-tool", "names a tool the descriptor does not have: 'format_disk'"),
    ("oversized", "the answer is larger than 512 KiB"),
]


HOSTILE = [
    ("newline-name", "tools/0/newName: 'add_note_v2\\n' does not match"),
    ("deep", "the model's answer is nested too deeply to read"),
]


@pytest.mark.parametrize("case", REFUSED, ids=[m for m, _ in REFUSED])
def test_a_bad_answer_leaves_the_generated_descriptor(
    notes_bus: Bus, model_server: str, plain: dict[str, Any], tmp_path: Path, case: tuple[str, str]
) -> None:
    refused(notes_bus, config(model_server, case[0]), plain, tmp_path, case[1])


@pytest.mark.hostile("validation")
@pytest.mark.parametrize("case", HOSTILE, ids=[m for m, _ in HOSTILE])
def test_a_hostile_answer_leaves_the_generated_descriptor(
    notes_bus: Bus, model_server: str, plain: dict[str, Any], tmp_path: Path, case: tuple[str, str]
) -> None:
    refused(notes_bus, config(model_server, case[0]), plain, tmp_path, case[1])


def refused(notes_bus: Bus, llm: dict[str, Any], plain: dict[str, Any], tmp_path: Path, why: str) -> None:
    out = tmp_path / "aai.json"
    done = generate(notes_bus, tmp_path / "home", out, "--llm", llm=llm)
    assert done.returncode == 0, done.stderr
    [warning] = [line for line in done.stderr.splitlines() if line.startswith("warning: ")]
    assert warning.startswith("warning: the LLM pass is not used: ")
    assert why in warning
    assert warning.endswith("; the descriptor is as generated")
    assert json.loads(out.read_text()) == plain


def test_a_slow_answer_is_not_waited_for(
    notes_bus: Bus, model_server: str, plain: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "aai.json"
    began = time.monotonic()
    done = generate(notes_bus, tmp_path / "home", out, "--llm", llm=config(model_server, "slow", timeout=0.5))
    assert time.monotonic() - began < SLOW
    assert done.returncode == 0, done.stderr
    assert "did not answer within 0.5 s (llm.timeout); the descriptor is as generated" in done.stderr
    assert json.loads(out.read_text()) == plain


def test_llm_needs_its_config_and_its_address_rules(notes_bus: Bus, tmp_path: Path) -> None:
    out = tmp_path / "aai.json"
    missing = generate(notes_bus, tmp_path / "home", out, "--llm")
    assert missing.returncode == 1
    assert "--llm needs an OpenAI-compatible endpoint in config.json" in missing.stderr
    assert not out.exists()
    remote = generate(notes_bus, tmp_path / "home", out, "--llm", llm=config("http://192.0.2.1/v1", "good"))
    assert remote.returncode == 0, remote.stderr
    assert "plain http is allowed only to loopback" in remote.stderr
    assert "the LLM pass is not used" in remote.stderr
    alone = subprocess.run([gateway_command(), "--llm"], capture_output=True, text=True, check=False)
    assert alone.returncode == 2
    assert "--llm goes with --generate" in alone.stderr


OPENAPI = TEST_APPS / "rest_server.openapi.json"
WEAKER = [
    ("delete-read-only", "marks delete_task readOnlyHint true, which its DELETE method rules out"),
    ("delete-harmless", "marks delete_task destructiveHint false, which its DELETE method rules out"),
    ("post-read-only", "marks create_task readOnlyHint true, which its POST method rules out"),
]


def generate_openapi(home: Path, out: Path, *args: str, llm: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """`--generate` of the test REST server's OpenAPI document; its tools, after printing any warning."""
    (home / ".aai").mkdir(parents=True, exist_ok=True)
    if llm is not None:
        (home / ".aai" / "config.json").write_text(json.dumps({"llm": llm}))
    done = subprocess.run(
        [gateway_command(), "--generate", str(OPENAPI), "--out", str(out), *args],
        env={"HOME": str(home), "AAI_PLATFORM": "linux", "NOTES_LLM_KEY": KEY},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    sys.stderr.write(done.stderr)
    found: list[dict[str, Any]] = json.loads(out.read_text())["platforms"]["web"]["tools"]
    return found


@pytest.mark.hostile("validation")
@pytest.mark.parametrize("case", WEAKER, ids=[m for m, _ in WEAKER])
def test_the_model_may_not_weaken_an_annotation(
    model_server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: tuple[str, str]
) -> None:
    model, why = case
    plain = generate_openapi(tmp_path / "plain", tmp_path / "plain.json")
    capsys.readouterr()
    tools = generate_openapi(tmp_path / "home", tmp_path / "aai.json", "--llm", llm=config(model_server, model))
    [warning] = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning: ")]
    assert why in warning
    assert warning.endswith("; the descriptor is as generated")
    assert tools == plain


def test_the_model_may_make_an_annotation_more_cautious(model_server: str, tmp_path: Path) -> None:
    plain = {t["name"]: t for t in generate_openapi(tmp_path / "plain", tmp_path / "plain.json")}
    tools = generate_openapi(tmp_path / "home", tmp_path / "aai.json", "--llm", llm=config(model_server, "cautious"))
    got = {t["name"]: t for t in tools}
    assert got["get_task"]["annotations"] == {"readOnlyHint": False}
    assert got["put_echo_rest"]["annotations"] == {"idempotentHint": True, "destructiveHint": True}
    assert got["delete_task"]["annotations"] == {"destructiveHint": True, "idempotentHint": True, "openWorldHint": True}
    assert got["delete_task"]["description"] == "Delete a task for good."
    assert {n: t for n, t in got.items() if n not in ("get_task", "put_echo_rest", "delete_task")} == {
        n: t for n, t in plain.items() if n not in ("get_task", "put_echo_rest", "delete_task")
    }
