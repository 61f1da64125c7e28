"""Whatever a descriptor's author and a caller send, the gateway answers with a named error, never "failed unexpectedly"
and never an exception of its own: hypothesis writes descriptors (tools with generated parameter schemas and request
templates) to a temporary AAI home, and calls their tools through an in-process `Gateway` with generated arguments. A
few generated descriptors also go through the installed command (`validate`, `call`).

The API sits on a loopback address the gateway refuses to reach by default, so no call leaves the machine.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aai_gateway.config import load_settings
from aai_gateway.errors import AaiError
from aai_gateway.service import Caller, Gateway
from tests.support import gateway_command

APP_ID = "dev.aai.fuzz"
UNEXPECTED = "failed unexpectedly"
NAMES = st.sampled_from(["a", "b", "text", "n", "x-y", "with space", "é", ""])
TYPES = st.sampled_from(["object", "array", "string", "integer", "number", "boolean", "null"])
REFS = st.sampled_from(["#", "#/definitions/a", "#/definitions/b", "#/properties/a"] * 3 + ["#/nowhere"])
PATTERNS = st.sampled_from(["^a", "(a+)+$", ".*", "\\d{2,}", "^[a-z]+$"])
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=3),
    max_leaves=8,
)


def _keywords(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "type": TYPES | st.lists(TYPES, min_size=1, max_size=3, unique=True),
            "properties": st.dictionaries(NAMES, inner, max_size=3),
            "required": st.lists(NAMES, max_size=3, unique=True),
            "items": inner | st.lists(inner, max_size=2),
            "additionalProperties": st.booleans() | inner,
            "patternProperties": st.dictionaries(PATTERNS, inner, max_size=2),
            "enum": st.lists(JSON_VALUES, min_size=1, max_size=3),
            "const": JSON_VALUES,
            "default": JSON_VALUES,
            "minimum": st.integers(-5, 5),
            "maximum": st.integers(-5, 5) | st.floats(allow_nan=False, allow_infinity=False),
            "multipleOf": st.sampled_from([0.1, 1, 3, 1e-300]),
            "minLength": st.integers(0, 3),
            "maxLength": st.integers(0, 3),
            "pattern": PATTERNS,
            "format": st.sampled_from(["date-time", "email", "uri", "regex", "ipv4", "nope"]),
            "allOf": st.lists(inner, min_size=1, max_size=2),
            "anyOf": st.lists(inner, min_size=1, max_size=2),
            "oneOf": st.lists(inner, min_size=1, max_size=2),
            "not": inner,
            "if": inner,
            "then": inner,
            "$ref": REFS,
            "definitions": st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2),
            "dependencies": st.dictionaries(NAMES, st.lists(NAMES, max_size=2) | inner, max_size=2),
            "uniqueItems": st.booleans(),
            "minItems": st.integers(0, 2),
        },
    )


LEAVES = st.booleans() | st.fixed_dictionaries({}, optional={"type": TYPES, "$ref": REFS, "minLength": st.just(1)})
SCHEMAS = st.recursive(LEAVES, _keywords, max_leaves=12)
PARAMETERS = st.builds(
    lambda extra, props, definitions: {**extra, "type": "object", "properties": props, "definitions": definitions},
    _keywords(SCHEMAS),
    st.fixed_dictionaries(dict.fromkeys(("a", "b", "text", "n"), SCHEMAS)),
    st.fixed_dictionaries({"a": SCHEMAS, "b": SCHEMAS}),
)
TEMPLATE_TEXT = st.sampled_from(["${a}", "${b}", "${text}", "x ${n} y", "plain", "${a}${b}"] * 4 + ["${nope}"])
ARGS = st.dictionaries(NAMES, JSON_VALUES, max_size=4) | JSON_VALUES


def descriptor(parameters: dict[str, Any], endpoint: str, body: Any, query: dict[str, str]) -> dict[str, Any]:
    return {
        "schema_version": "1.0",
        "appId": APP_ID,
        "name": "Fuzz",
        "description": "Generated",
        "version": "1.0.0",
        "platforms": {
            "web": {
                "automation": "restapi",
                "base_url": "https://127.0.0.1:9",
                "tools": [
                    {
                        "name": "go",
                        "description": "Generated",
                        "parameters": parameters,
                        "endpoint": "/" + endpoint,
                        "method": "POST",
                        "body": body,
                        "query_params": query,
                    }
                ],
            }
        },
    }


DESCRIPTORS = st.builds(
    descriptor,
    PARAMETERS,
    TEMPLATE_TEXT,
    st.dictionaries(NAMES, TEMPLATE_TEXT, max_size=2) | st.lists(TEMPLATE_TEXT, max_size=2),
    st.dictionaries(st.sampled_from(["q", "p"]), TEMPLATE_TEXT, max_size=2),
)


def home_with(tmp: Path, doc: dict[str, Any]) -> Path:
    home = tmp / "home"
    folder = home / ".aai" / APP_ID
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "aai.json").write_text(json.dumps(doc, ensure_ascii=False), "utf-8")
    return home


async def exercise(home: Path, calls: list[Any]) -> None:
    gateway = Gateway(load_settings({"HOME": str(home), "AAI_PLATFORM": "linux"}))
    try:
        served = APP_ID in {a.app_id for a in gateway.apps()}
        if served:
            assert gateway.guide(APP_ID)
        for args in calls:
            detail = ""
            try:
                await gateway.call(APP_ID, "go", args, Caller("fuzz", "cli"))
            except AaiError as exc:
                detail = exc.detail
            assert UNEXPECTED not in detail, (detail, args)
    finally:
        await gateway.aclose()


@pytest.mark.hostile("validation")
@pytest.mark.filterwarnings("ignore:Generating overly large repr")  # the nested schema strategy's own repr
@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)
@given(doc=DESCRIPTORS, calls=st.lists(ARGS, min_size=1, max_size=4))
def test_no_descriptor_or_argument_makes_the_gateway_fail_unexpectedly(
    tmp_path_factory: pytest.TempPathFactory, doc: dict[str, Any], calls: list[Any]
) -> None:
    asyncio.run(exercise(home_with(tmp_path_factory.mktemp("fuzz"), doc), calls))


@pytest.mark.hostile("validation")
@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(doc=DESCRIPTORS, args=st.dictionaries(NAMES, JSON_VALUES, max_size=3))
def test_the_installed_command_never_fails_unexpectedly(
    tmp_path_factory: pytest.TempPathFactory, doc: dict[str, Any], args: dict[str, Any]
) -> None:
    home = home_with(tmp_path_factory.mktemp("fuzz-cli"), doc)
    env = {"HOME": str(home), "AAI_PLATFORM": "linux", "PATH": "/usr/bin:/bin"}
    checked = subprocess.run(
        [gateway_command(), "validate", str(home / ".aai" / APP_ID / "aai.json")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "Traceback" not in checked.stderr, checked.stderr
    called = subprocess.run(
        [gateway_command(), "call", APP_ID, "go", json.dumps(args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert called.returncode != 0  # refused one way or another: nothing is listening, and loopback is refused
    assert UNEXPECTED not in called.stderr, called.stderr
    assert "Traceback" not in called.stderr, called.stderr
