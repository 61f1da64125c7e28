"""Every call through `Gateway.call` lands in the history, in-process, against the real DBus echo app."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from aai_gateway.config import load_settings
from aai_gateway.errors import AaiError
from aai_gateway.history import HistoryStore, Record
from aai_gateway.history.redact import MASK
from aai_gateway.service import Caller, Gateway
from tests.support import TEST_APPS, Bus, install_descriptor, until_echo_called

pytestmark = pytest.mark.anyio

# The command line's transport: the user at their terminal needs no consent prompt.
CALLER = Caller(name="load-test", transport="cli")
LOG_LINE = re.compile(r"^call (\w{12}) load-test (\S+):(\S+) (ok|failed (\w+)) ")

VAULT = {
    "schema_version": "1.0",
    "appId": "dev.aai.vault",
    "name": "Vault",
    "description": "The echo service behind tools whose arguments are secret",
    "version": "1.0.0",
    "platforms": {
        "linux": {
            "automation": "dbus",
            "service": "dev.aai.Echo",
            "object": "/dev/aai/Echo",
            "interface": "dev.aai.Echo",
            "tools": [
                {
                    "name": "unlock",
                    "description": "Echo a PIN back (as a badly behaved app would)",
                    "parameters": {
                        "type": "object",
                        "properties": {"pin": {"type": "string", "x-sensitive": True}},
                        "required": ["pin"],
                    },
                    "method": "Echo",
                    "output_parser": "string",
                },
                {
                    "name": "sign_in",
                    "description": "Fail with a message that repeats the password",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "user": {"type": "string"},
                            "password": {"type": "string"},
                        },
                        "required": ["user", "password"],
                    },
                    "method": "Fail",
                    "args": ["${user}:${password}"],
                },
                {
                    "name": "describe",
                    "description": "Report the arguments back as JSON",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "count": {"type": "integer"},
                            "ratio": {"type": "number"},
                            "flag": {"type": "boolean"},
                            "tags": {"type": "array", "items": {"type": "string"}},
                        },
                        "required": ["name", "count", "ratio", "flag", "tags"],
                    },
                    "method": "Describe",
                    "output_parser": "string",
                },
            ],
        }
    },
}


@pytest.fixture
async def gateway(bus: Bus, echo_app: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Gateway]:
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", bus.address)
    home = tmp_path / "home"
    install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    (home / ".aai" / "dev.aai.vault").mkdir()
    (home / ".aai" / "dev.aai.vault" / "aai.json").write_text(json.dumps(VAULT))
    settings = load_settings({"HOME": str(home), "AAI_PLATFORM": "linux"})
    served = Gateway(settings)
    try:
        yield served
    finally:
        await served.aclose()
        served.history.close()


def plan(i: int) -> tuple[str, dict[str, Any], str | None]:
    """The call number i makes: tool, arguments, and the error type expected (None: success)."""
    kind = i % 5
    if kind == 0:
        return "echo", {"text": f"m{i}"}, None
    if kind == 1:
        return "add", {"a": i, "b": 1}, None
    if kind == 2:
        return "echo", {"txt": f"m{i}"}, "INVALID_PARAMS"
    if kind == 3:
        return "fail", {"message": f"f{i}"}, "AUTOMATION_FAILED"
    return "no_such_tool", {"n": i}, "TOOL_NOT_FOUND"


def key_of(record: Record) -> Any:
    return next(iter(record.args.values()))


async def test_a_thousand_concurrent_calls_make_a_thousand_records(
    gateway: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    """All at once: 400 fail validation in the gateway, 600 go to the app (200 of them to a failing method).

    The test bus lets one connection wait for 128 replies at most, so some of the 600 may be refused with
    LimitsExceeded; each record must match exactly what its caller received, whatever that was."""
    caplog.set_level(logging.INFO, logger="aai_gateway.calls")

    async def one(i: int) -> Any:
        tool, args, _ = plan(i)
        return await gateway.call("dev.aai.echo", tool, args, CALLER)

    outcomes = await asyncio.gather(*(one(i) for i in range(1000)), return_exceptions=True)

    store = gateway.history
    assert store.count() == 1000, "every call is committed before its answer, so nothing is pending here"
    records = store.query(limit=None)
    assert len({r.call_id for r in records}) == 1000
    by_key = {key_of(r): r for r in records}
    assert len(by_key) == 1000
    for i, outcome in enumerate(outcomes):
        tool, args, expected = plan(i)
        record = by_key[next(iter(args.values()))]
        assert (record.app, record.tool, record.args) == ("dev.aai.echo", tool, args)
        assert (record.caller, record.transport) == ("load-test", "cli")
        assert record.duration_ms >= 0
        if isinstance(outcome, AaiError):
            assert expected is None or outcome.type == expected, (i, outcome)
            assert (record.status, record.error_code, record.error_type) == ("error", outcome.code, outcome.type)
            assert record.error_detail == outcome.detail
            assert record.result is None
        else:
            assert expected is None, (i, outcome)
            assert outcome == (f"m{i}" if tool == "echo" else i + 1)
            assert (record.status, record.error_type) == ("ok", None)
            assert record.result == json.dumps(outcome)
    assert store.count(status="error") >= 600
    assert store.count(tool="no_such_tool", status="error") == 200
    assert sum(1 for r in records if r.error_type == "INVALID_PARAMS") == 200
    assert any(r.status == "ok" for r in records)

    # one log line per call, under the same id as its record
    logged = {}
    for message in caplog.messages:
        match = LOG_LINE.match(message)
        if match:
            logged[match[1]] = "ok" if match[4] == "ok" else match[5]
    assert logged == {r.call_id: "ok" if r.status == "ok" else r.error_type for r in records}


async def test_secrets_are_redacted_from_arguments_results_and_errors(gateway: Gateway) -> None:
    assert await gateway.call("dev.aai.vault", "unlock", {"pin": "4711-0815"}, CALLER) == "4711-0815"
    with pytest.raises(AaiError) as failed:
        await gateway.call("dev.aai.vault", "sign_in", {"user": "ada", "password": "hunter2!"}, CALLER)
    assert "hunter2!" in failed.value.detail, "the caller still gets the app's own answer"
    described = await gateway.call(
        "dev.aai.vault",
        "describe",
        {"name": "api_token", "count": 1, "ratio": 0.5, "flag": True, "tags": ["x"]},
        CALLER,
    )
    assert json.loads(described)["name"] == "api_token"

    unlock, sign_in, describe = (gateway.history.query(tool=t)[0] for t in ("unlock", "sign_in", "describe"))
    assert unlock.args == {"pin": MASK}
    assert unlock.result == json.dumps(MASK)
    assert sign_in.args == {"user": "ada", "password": MASK}
    assert "hunter2!" not in (sign_in.error_detail or "")
    assert MASK in (sign_in.error_detail or "")
    assert describe.args["name"] == "api_token", "a secret-looking value under an ordinary key is kept"
    everything = json.dumps([r.to_json() for r in gateway.history.query(limit=None)])
    assert "4711-0815" not in everything
    assert "hunter2!" not in everything


async def test_large_results_are_kept_as_excerpts(gateway: Gateway) -> None:
    text = "é" * 100_000
    assert await gateway.call("dev.aai.echo", "echo", {"text": text}, CALLER) == text
    record = gateway.history.query()[0]
    assert record.result is not None
    assert record.result_truncated
    assert len(record.result) == 2048
    assert record.result.startswith('"éé')
    assert len(record.args["text"]) < 1100


async def test_a_crash_is_recorded_as_the_automation_failure_the_caller_sees(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def crash(*_: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(gateway.calls, "_call", crash)
    with pytest.raises(AaiError) as failed:
        await gateway.call("dev.aai.echo", "echo", {"text": "x"}, CALLER)
    record = gateway.history.query()[0]
    assert (record.status, record.error_code, record.error_type) == ("error", -32001, "AUTOMATION_FAILED")
    assert record.error_detail == failed.value.detail


async def test_a_cancelled_call_is_recorded(gateway: Gateway, bus: Bus) -> None:
    before = bus.echo_calls()
    task = asyncio.create_task(gateway.call("dev.aai.echo", "slow", {"seconds": 30}, CALLER))
    await until_echo_called(bus, before)  # the call is running in the app
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gateway.history.flush(10)
    record = gateway.history.query()[0]
    assert (record.tool, record.status, record.error_type, record.error_code) == ("slow", "error", "CANCELLED", None)


async def test_calls_go_on_when_the_history_cannot_be_written(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    settings = load_settings({"HOME": str(tmp_path / "home"), "AAI_PLATFORM": "linux"})
    gateway = Gateway(settings, history=HistoryStore(blocker / "history.db"))
    caplog.set_level(logging.WARNING, logger="aai_gateway.history")
    try:
        for _ in range(3):
            with pytest.raises(AaiError, match="no app 'nope'"):
                await gateway.call("nope", "x", {}, CALLER)
    finally:
        gateway.history.close()
    warnings = [m for m in caplog.messages if "not being written" in m]
    assert len(warnings) == 1, caplog.messages
