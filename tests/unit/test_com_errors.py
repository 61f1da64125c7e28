"""COM failures through the executor and the pywin32 stand-in: every row of the HRESULT table, missing
members, Python exceptions of the object model, the timeout, and calls running side by side."""

from __future__ import annotations

import asyncio
from importlib import import_module
from typing import Any

import pytest

from aai_gateway.errors import (
    AaiError,
    AppNotFound,
    AppNotRunning,
    AutomationFailed,
    PermissionDenied,
    Timeout,
)
from aai_gateway.executors.com import ComExecutor
from aai_gateway.executors.com_errors import RULES, Site, from_com_error, unsigned
from tests.unit.test_com_actions import VALUES, app, call_of, load_standin, run

pytestmark = pytest.mark.anyio

ERRORS = {"action": "create", "var": "e", "progid": "Test.Errors"}
RAISE = {"action": "call", "object": "e", "method": "Raise", "args": ["${count}"]}

ROWS: list[tuple[int, type[AaiError], str]] = [
    (0x80040154, AppNotFound, "no COM class is registered for ProgID 'Test.Errors'; is the app installed?"),
    (0x800401F3, AppNotFound, "Windows knows no ProgID 'Test.Errors' (invalid class string); is the app installed?"),
    (0x80080005, AppNotRunning, "Test.Errors could not be started (server execution failed)"),
    (0x800706BA, AppNotRunning, "Test.Errors is not reachable (the RPC server is unavailable); it may have quit"),
    (0x80010108, AppNotRunning, "Test.Errors disconnected during script[1] (call); it may have quit"),
    (0x80010007, AppNotRunning, "Test.Errors quit or crashed during script[1] (call)"),
    (
        0x80070005,
        PermissionDenied,
        "Windows refused access to Test.Errors (access denied); the gateway and the app may run with different rights",
    ),
    (0x8001010A, AutomationFailed, "Test.Errors is busy (a dialog may be open); close it and try again"),
    (0x80010001, AutomationFailed, "Test.Errors is busy (a dialog may be open); close it and try again"),
    (0x80020006, AutomationFailed, "script[1] (call): e has no member 'Raise'"),
    (0x80020003, AutomationFailed, "script[1] (call): e has no member 'Raise'"),
    (
        0x80020009,
        AutomationFailed,
        "script[1] (call): Test.Errors reported an error: The operation failed on purpose. (0x80004005)",
    ),
    (0x80020005, AutomationFailed, "script[1] (call): Raise refused argument 1 (type mismatch)"),
    (0x8002000E, AutomationFailed, "script[1] (call): Raise takes a different number of arguments"),
    (0x80004001, AutomationFailed, "script[1] (call): COM error 0x80004001: Raised 0x80004001 on request."),
]


def test_every_rule_of_the_table_has_a_row_here() -> None:
    assert {hresult for hresult, _, _ in ROWS if hresult in RULES} == set(RULES)


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Any:
    return load_standin(monkeypatch)


@pytest.mark.parametrize(("hresult", "error", "detail"), ROWS, ids=[f"0x{r[0]:08X}" for r in ROWS])
async def test_each_hresult_becomes_its_error(world: Any, hresult: int, error: type[AaiError], detail: str) -> None:
    with pytest.raises(AaiError) as caught:
        await run([ERRORS, RAISE], {"count": hresult})
    assert (type(caught.value), caught.value.detail) == (error, detail)
    assert world.LOG[-1]["args"] == [hresult]


@pytest.mark.parametrize(
    ("progid", "error", "detail"),
    [
        ("No.Such", AppNotFound, "Windows knows no ProgID 'No.Such' (invalid class string); is the app installed?"),
        ("Test.NotRegistered", AppNotFound, "no COM class is registered for ProgID 'Test.NotRegistered'"),
        ("Test.ServerFails", AppNotRunning, "Test.ServerFails could not be started (server execution failed)"),
        ("Test.Gone", AppNotRunning, "Test.Gone is not reachable (the RPC server is unavailable); it may have quit"),
        ("Test.AccessDenied", PermissionDenied, "Windows refused access to Test.AccessDenied (access denied)"),
    ],
)
async def test_creating_an_object_fails_by_the_table(
    world: Any, progid: str, error: type[AaiError], detail: str
) -> None:
    with pytest.raises(error) as caught:
        await run([{"action": "create", "var": "a", "progid": progid}])
    assert caught.value.detail.startswith(detail)
    assert world.LOG == []


def test_signed_and_unsigned_hresults_are_the_same() -> None:
    assert unsigned(-2147221164) == 0x80040154
    site = Site("X.Y", "script[0] (create)")
    assert type(from_com_error((-2147221164, "Class not registered", None, None), site)) is AppNotFound
    assert type(from_com_error((0x80040154, "Class not registered", None, None), site)) is AppNotFound


def test_an_exception_without_excepinfo_keeps_the_windows_text() -> None:
    site = Site("X.Y", "script[1] (call)", "x", "Go")
    error = from_com_error((-2147352567, "Exception occurred.", None, None), site)
    assert error.detail == "script[1] (call): X.Y reported an error: Exception occurred."


async def test_an_unknown_member_of_a_late_bound_object(world: Any) -> None:
    script = [
        {"action": "create", "var": "app", "progid": "Outlook.Application"},
        {"action": "call", "var": "mail", "object": "app", "method": "CreateItem", "args": [0]},
        {"action": "set", "object": "mail", "property": "Too", "value": "x"},
    ]
    with pytest.raises(AutomationFailed) as caught:
        await run(script)
    assert caught.value.detail == "script[2] (set): mail has no member 'Too'"


async def test_an_unknown_member_as_pywin32s_dynamic_dispatch_reports_it(world: Any) -> None:
    for action in (
        {"action": "call", "object": "e", "method": "Nope"},
        {"action": "get", "object": "e", "property": "Nope", "var": "x"},
        {"action": "set", "object": "e", "property": "Nope", "value": 1},
    ):
        with pytest.raises(AutomationFailed) as caught:
            await run([ERRORS, action])
        assert caught.value.detail == f"script[1] ({action['action']}): e has no member 'Nope'"


async def test_a_read_only_property_cannot_be_set(world: Any) -> None:
    with pytest.raises(AutomationFailed, match=r": script\[1\] \(set\): v has no member 'Count'$"):
        await run([VALUES, {"action": "set", "object": "v", "property": "Count", "value": 4}])


async def test_the_apps_own_exception_is_reported_with_its_source(world: Any) -> None:
    script = [
        {"action": "create", "var": "app", "progid": "Outlook.Application"},
        {"action": "call", "var": "mail", "object": "app", "method": "CreateItem", "args": [0]},
        {"action": "call", "object": "mail", "method": "Send"},
    ]
    with pytest.raises(AutomationFailed) as caught:
        await run(script)
    assert caught.value.detail == (
        "script[2] (call): Microsoft Outlook reported an error: There must be at least one name in the To box. "
        "(0x80004005)"
    )


async def test_any_other_exception_of_the_object_model_keeps_its_text(world: Any) -> None:
    script = [ERRORS, {"action": "call", "object": "e", "method": "Fail", "args": ["${text}"]}]
    with pytest.raises(AutomationFailed, match=r": script\[1\] \(call\): ValueError: disk full$"):
        await run(script, {"text": "disk full"})
    with pytest.raises(AutomationFailed, match=r"script\[1\] \(call\): 'Count' is a property, not a method"):
        await run([VALUES, {"action": "call", "object": "v", "method": "Count", "args": [1]}])


BLOCK = [
    {"action": "create", "var": "b", "progid": "Test.Blocking"},
    {"action": "call", "object": "b", "method": "Wait"},
]


async def until(condition: Any, what: str) -> None:
    """Poll `condition` on the event loop (bounded, so a broken test fails instead of hanging)."""
    async with asyncio.timeout(30):
        while not condition():
            await asyncio.sleep(0.005)
    assert condition(), what


def waiting(world: Any) -> int:
    return sum(1 for e in world.LOG if e.get("method") == "Wait")


async def test_a_call_that_outruns_its_timeout_answers_timeout_and_its_thread_finishes_later(world: Any) -> None:
    pythoncom = import_module("pythoncom")
    executor = ComExecutor()
    with pytest.raises(Timeout) as caught:
        await executor.execute(call_of(app(BLOCK), timeout=0.05))
    assert caught.value.detail == (
        "com.example.office's t did not finish within 0.05 s; a COM call cannot be interrupted, so the app may "
        "still complete it"
    )
    assert waiting(world) == 1
    world.RELEASE.set()
    await until(lambda: pythoncom.APARTMENTS["open"] == 0, "the abandoned call's thread to finish")
    assert world.LOG[-1] == {"op": "returned", "object": "Test.Blocking", "released": True}
    assert await executor.execute(call_of(app(BLOCK))) == "released"


async def test_calls_to_different_apps_run_side_by_side(world: Any) -> None:
    executor = ComExecutor()
    first = asyncio.ensure_future(executor.execute(call_of(app(BLOCK, "com.example.one"))))
    second = asyncio.ensure_future(executor.execute(call_of(app(BLOCK, "com.example.two"))))
    # Both wait inside the app at once, which only parallel calls can do: each blocks until released.
    await until(lambda: waiting(world) == 2, "both calls to be inside Wait")
    assert not first.done()
    assert not second.done()
    world.RELEASE.set()
    assert list(await asyncio.gather(first, second)) == ["released", "released"]
