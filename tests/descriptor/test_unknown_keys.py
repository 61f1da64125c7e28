"""Keys the schemas do not know are warnings naming the pointer and the closest known key; never errors."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from aai_gateway.descriptor.validate import check_document, load
from aai_gateway.problems import Problem
from tests.support import EXAMPLES, TEST_APPS, gateway_command

MPV = TEST_APPS / "io.mpv" / "aai.json"
GITHUB = EXAMPLES / "com.github.api" / "aai.json"
TASKS = TEST_APPS / "dev.aai.tasks" / "aai.json"


def doc_of(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return loaded


def unknown(doc: dict[str, Any]) -> list[tuple[str, str]]:
    loaded = check_document(doc, "aai.json")
    assert loaded.ok, loaded.problems
    return [(p.pointer, p.message) for p in loaded.problems if p.message.startswith("unknown key")]


def gateway(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(home), "AAI_PLATFORM": "linux"}
    return subprocess.run([gateway_command(), *args], capture_output=True, text=True, env=env, timeout=60, check=False)


def with_typo(path: Path) -> Path:
    doc = doc_of(MPV)
    doc["platforms"]["linux"]["tools"][0]["timeut"] = 5
    target = path / "io.mpv" / "aai.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(doc))
    return target


def test_a_misspelled_optional_key_is_a_warning_with_the_closest_key() -> None:
    doc = doc_of(MPV)
    doc["platforms"]["linux"]["tools"][0]["timeut"] = 5
    loaded = check_document(doc, "aai.json")
    assert loaded.ok
    assert loaded.problems == (
        Problem(
            "aai.json", "/platforms/linux/tools/0/timeut", "unknown key 'timeut' (did you mean 'timeout'?)", "warning"
        ),
    )
    assert str(loaded.problems[0]) == (
        "aai.json#/platforms/linux/tools/0/timeut: warning: unknown key 'timeut' (did you mean 'timeout'?)"
    )


def test_unknown_keys_are_found_at_every_level_of_each_shape() -> None:
    multi = doc_of(GITHUB)
    multi["Description"] = "case"
    multi["platforms"]["web"]["auth"]["env_vr"] = "X"
    multi["platforms"]["web"]["base_ur"] = "https://api.github.com"
    multi["platforms"]["web"]["tools"][1]["qwerty"] = 1
    assert unknown(multi) == [
        ("/Description", "unknown key 'Description' (did you mean 'description'?)"),
        ("/platforms/web/auth/env_vr", "unknown key 'env_vr' (did you mean 'env_var'?)"),
        ("/platforms/web/base_ur", "unknown key 'base_ur' (did you mean 'base_url'?)"),
        ("/platforms/web/tools/1/qwerty", "unknown key 'qwerty'"),
    ]

    camel = doc_of(TASKS)
    camel["app"]["defaultLng"] = "en"
    camel["execution"]["baseUri"] = "https://example.com"
    camel["tools"][0]["execution"]["methd"] = "GET"
    assert unknown(camel) == [
        ("/app/defaultLng", "unknown key 'defaultLng' (did you mean 'defaultLang'?)"),
        ("/execution/baseUri", "unknown key 'baseUri' (did you mean 'baseUrl'?)"),
        ("/tools/0/execution/methd", "unknown key 'methd' (did you mean 'method'?)"),
    ]

    single: dict[str, Any] = {
        "schema_version": "1.0",
        "version": "1.0.0",
        "platform": "web",
        "app": {"id": "org.example.notes", "name": "Notes", "description": "Notes", "alias": ["n"]},
        "execution": {"type": "http", "base_url": "https://example.com"},
        "auth": {"type": "api_key", "env_var": "NOTES_KEY", "key_name": "X-Key"},
        "tools": [{"name": "list", "description": "List", "parameters": {"type": "object"}, "executon": {}}],
    }
    assert unknown(single) == [
        ("/app/alias", "unknown key 'alias' (did you mean 'aliases'?)"),
        ("/tools/0/executon", "unknown key 'executon' (did you mean 'execution'?)"),
    ]


def test_free_form_places_and_extensions_are_left_alone() -> None:
    doc = doc_of(GITHUB)
    doc["$schema"] = "https://example.com/aai.schema.json"
    doc["x-vendor"] = {"anything": True}
    web = doc["platforms"]["web"]
    web["default_headers"]["X-Custom"] = "1"
    tool = web["tools"][0]
    tool["x-note"] = "kept"
    tool["headers"] = {"X-Trace": "${trace}"}
    tool["body"] = {"titel": "${title}", "nested": {"anything": 1}}
    tool["query_params"] = {"pge": "${page}"}
    tool["parameters"] = {
        "type": "object",
        "properties": {
            "trace": {"type": "string", "x-sensitive": True, "descripton": "kept as written"},
            "title": {"type": "string"},
            "page": {"type": "integer"},
        },
        "additionalProperties": False,
    }
    tool["returns"] = {"type": "object", "propertys": {}}
    assert unknown(doc) == []


def test_shape_c_takes_snake_case_spellings_without_a_warning() -> None:
    doc = copy.deepcopy(doc_of(TASKS))
    doc["app"]["default_lang"] = doc["app"].pop("defaultLang")
    doc["execution"]["base_url"] = doc["execution"].pop("baseUrl")
    doc["auth"] = {"type": "apiKey", "env_var": "TASKS_KEY", "keyName": "X-Key"}
    assert unknown(doc) == []


@pytest.mark.parametrize(
    "path",
    sorted([*EXAMPLES.glob("*/aai.json"), *TEST_APPS.glob("*/aai.json")]),
    ids=lambda p: p.parent.name,
)
def test_the_shipped_descriptors_use_only_known_keys(path: Path) -> None:
    loaded = load(path)
    assert loaded.ok, loaded.problems
    assert [p for p in loaded.problems if "unknown key" in p.message] == []


def test_validate_shows_the_warning_and_a_valid_file_stays_valid(tmp_path: Path) -> None:
    target = with_typo(tmp_path / "descriptors")
    text = gateway("validate", str(target), home=tmp_path)
    assert text.returncode == 0, text.stderr
    assert f"?  {target}#/platforms/linux/tools/0/timeut: warning: unknown key 'timeut' (did you mean 'timeout'?)" in (
        text.stdout.splitlines()
    )
    assert text.stdout.splitlines()[-1] == "1 valid, 0 invalid"

    as_json = gateway("validate", "--json", str(target), home=tmp_path)
    assert as_json.returncode == 0, as_json.stderr
    [result] = json.loads(as_json.stdout)
    assert result["valid"] is True
    assert result["problems"] == [
        {
            "file": str(target),
            "pointer": "/platforms/linux/tools/0/timeut",
            "message": "unknown key 'timeut' (did you mean 'timeout'?)",
            "severity": "warning",
        }
    ]


def test_scan_lists_the_warning_beside_the_app(tmp_path: Path) -> None:
    target = with_typo(tmp_path / ".aai")
    result = gateway("--scan", home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "  io.mpv  mpv | mpv 播放器  [linux (dbus)]  13 tools" in result.stdout
    assert (
        f"  {target}#/platforms/linux/tools/0/timeut: warning: unknown key 'timeut' (did you mean 'timeout'?)"
        in result.stdout.splitlines()
    )
