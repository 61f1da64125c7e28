"""Descriptors that once passed `validate` and failed only when a tool was called: each is now a `validate` problem at
its JSON pointer, checked through the installed command (one `validate --json` run for the whole corpus).
"""

from __future__ import annotations

import copy
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aai_gateway import templates
from aai_gateway.descriptor import tool_checks
from tests.support import TEST_APPS, gateway_command

ECHO = json.loads((TEST_APPS / "dev.aai.echo" / "aai.json").read_text("utf-8"))
MAIL = json.loads((Path(__file__).parents[1] / "golden" / "seeds" / "seed000-mail-multi.json").read_text("utf-8"))
REST = json.loads((TEST_APPS / "dev.aai.rest" / "aai.json").read_text("utf-8"))

Edit = Callable[[dict[str, Any]], None]


def dbus_tool(doc: dict[str, Any]) -> dict[str, Any]:
    tool: dict[str, Any] = doc["platforms"]["linux"]["tools"][0]
    return tool


def linux(doc: dict[str, Any]) -> dict[str, Any]:
    section: dict[str, Any] = doc["platforms"]["linux"]
    return section


def mac_tool(doc: dict[str, Any]) -> dict[str, Any]:
    tool: dict[str, Any] = doc["platforms"]["macos"]["tools"][0]
    return tool


def rest_tool(doc: dict[str, Any]) -> dict[str, Any]:
    tool: dict[str, Any] = doc["platforms"]["web"]["tools"][0]
    return tool


def text_ref(ref: str) -> Edit:
    return lambda d: dbus_tool(d)["parameters"]["properties"].__setitem__("text", {"$ref": ref})


def param_update(**extra: Any) -> Edit:
    return lambda d: dbus_tool(d)["parameters"].update(extra)


def set_key(tool: Callable[[dict[str, Any]], dict[str, Any]], key: str, value: Any) -> Edit:
    return lambda d: tool(d).__setitem__(key, value)


D = "/platforms/linux/tools/0"
M = "/platforms/macos/tools/0"
W = "/platforms/web/tools/0"

# name: (base document, edit, pointer of the problem, words of its message)
CASES: dict[str, tuple[dict[str, Any], Edit, str, str]] = {
    "ref-missing": (ECHO, text_ref("#/definitions/nope"), f"{D}/parameters/properties/text/$ref", "points to nothing"),
    "ref-remote": (ECHO, text_ref("https://example.com/s.json"), f"{D}/parameters/properties/text/$ref", "not a local"),
    "ref-bad-index": (ECHO, text_ref("#/required/7"), f"{D}/parameters/properties/text/$ref", "points to nothing"),
    "ref-self-root": (ECHO, param_update(allOf=[{"$ref": "#"}]), f"{D}/parameters/allOf/0/$ref", "refers back"),
    "ref-self-definition": (
        ECHO,
        param_update(definitions={"a": {"$ref": "#/definitions/a"}}),
        f"{D}/parameters/definitions/a/$ref",
        "refers back",
    ),
    "ref-loop-two": (
        ECHO,
        param_update(definitions={"a": {"anyOf": [{"$ref": "#/definitions/b"}]}, "b": {"$ref": "#/definitions/a"}}),
        f"{D}/parameters/definitions/b/$ref",
        "refers back",
    ),
    "dbus-args-nope": (ECHO, set_key(dbus_tool, "args", ["${nope}"]), f"{D}/args/0", "${nope} is not a parameter"),
    "dbus-args-inside-text": (
        ECHO,
        set_key(dbus_tool, "args", ["hello ${text} and ${txet}"]),
        f"{D}/args/0",
        "${txet} is not a parameter",
    ),
    "dbus-method-and-property": (ECHO, set_key(dbus_tool, "property", "Volume"), f"{D}/property", "not both"),
    "rest-endpoint-nope": (REST, set_key(rest_tool, "endpoint", "/items/${nope}"), f"{W}/endpoint", "${nope}"),
    "rest-body-nope": (REST, set_key(rest_tool, "body", {"a": {"b": "${nope}"}}), f"{W}/body/a/b", "${nope}"),
    "rest-query-nope": (REST, set_key(rest_tool, "query_params", {"q": "${nope}"}), f"{W}/query_params/q", "${nope}"),
    "rest-headers-nope": (REST, set_key(rest_tool, "headers", {"X-A": "${nope}"}), f"{W}/headers/X-A", "${nope}"),
    "applescript-chevron": (
        MAIL,
        set_key(mac_tool, "script", 'tell application "Mail" to «event ${subject}»'),
        f"{M}/script",
        "inside a «raw code»",
    ),
    "applescript-nope": (MAIL, set_key(mac_tool, "script", 'return "${nope}"'), f"{M}/script", "not a parameter"),
    "applescript-identifier": (MAIL, set_key(mac_tool, "script", "return |${subject}|"), f"{M}/script", "|identifier|"),
    "pattern-broken": (
        ECHO,
        lambda d: dbus_tool(d)["parameters"]["properties"]["text"].__setitem__("pattern", "(("),
        f"{D}/parameters/properties/text/pattern",
        "is not a valid regex",
    ),
    "app-id-10000": (ECHO, lambda d: d.__setitem__("appId", "a." + "b" * 10_000), "/appId", "at most 255 characters"),
    # Python's `$` matches before a final newline: an id ending in one once passed
    "app-id-final-newline": (ECHO, lambda d: d.__setitem__("appId", "com.example.nl\n"), "/appId", "expected form"),
    "tool-name-final-newline": (ECHO, set_key(dbus_tool, "name", "echo\n"), f"{D}/name", "expected form"),
    "dbus-interface-final-newline": (
        ECHO,
        set_key(linux, "interface", "dev.aai.Echo\n"),
        "/platforms/linux/interface",
        "expected form",
    ),
    "version-final-newline": (ECHO, lambda d: d.__setitem__("schema_version", "1.0\n"), "/schema_version", "form"),
}


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    folder = tmp_path_factory.mktemp("hostile-validation")
    for name, (base, edit, _, _) in CASES.items():
        doc = copy.deepcopy(base)
        edit(doc)
        (folder / f"{name}.json").write_text(json.dumps(doc, ensure_ascii=False), "utf-8")
    done = subprocess.run(
        [gateway_command(), "--platform", "macos", "validate", "--json", str(folder)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    return {Path(r["file"]).stem: r["problems"] for r in json.loads(done.stdout)}


@pytest.mark.hostile("validation")
@pytest.mark.parametrize("name", sorted(CASES))
def test_call_time_failures_are_validate_problems(name: str, verdicts: dict[str, list[dict[str, Any]]]) -> None:
    _, _, where, words = CASES[name]
    problems = verdicts[name]
    assert any(p["pointer"] == where and words in p["message"] and p["severity"] == "error" for p in problems), problems


@pytest.mark.hostile("validation")
def test_the_unedited_bases_stay_valid(tmp_path: Path) -> None:
    for number, base in enumerate((ECHO, MAIL, REST)):
        (tmp_path / f"{number}.json").write_text(json.dumps(base))
        done = subprocess.run(
            [gateway_command(), "validate", str(tmp_path / f"{number}.json")],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.hostile("validation")
def test_a_pattern_the_gateway_does_not_run_is_a_warning(tmp_path: Path) -> None:
    doc = copy.deepcopy(ECHO)
    dbus_tool(doc)["parameters"]["properties"]["text"]["pattern"] = "^(?!admin)[a-z]+$"
    (tmp_path / "lookahead.json").write_text(json.dumps(doc))
    done = subprocess.run(
        [gateway_command(), "validate", "--json", str(tmp_path / "lookahead.json")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (problem,) = json.loads(done.stdout)[0]["problems"]
    assert problem["severity"] == "warning"
    assert problem["pointer"] == f"{D}/parameters/properties/text/pattern"
    assert "uses lookaround" in problem["message"]
    assert "does not check it" in problem["message"]


@pytest.mark.hostile("validation")
@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_a_deeply_nested_config_is_a_config_error(tmp_path: Path, depth: int) -> None:
    aai = tmp_path / ".aai"
    aai.mkdir()
    (aai / "config.json").write_text('{"apps": ' + "[" * depth + "]" * depth + "}")
    done = subprocess.run(
        [gateway_command(), "apps"],
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert "config.json" in done.stderr
    assert "nested too deeply" in done.stderr or "key 'apps'" in done.stderr


def test_the_placeholder_pattern_is_the_templates_one() -> None:
    assert tool_checks.PLACEHOLDER.pattern == templates.PLACEHOLDER.pattern
