"""A small COM world standing in for Windows apps: late-bound objects whose every use is recorded.

ProgIDs: Outlook.Application (CreateItem(0) → a MailItem with To, Subject, Body and Send()),
Scripting.FileSystemObject (GetTempName, BuildPath, GetExtensionName), Test.Envelope (Execute(request)
→ response, the JSON envelope of shapes B and C), Test.Values (typed values and an echo), Test.Errors
(raises any HRESULT; unknown names raise AttributeError as pywin32's dynamic dispatch does), Test.Blocking
(Wait() blocks until RELEASE is set), and ProgIDs failing at creation: Test.NotRegistered,
Test.ServerFails, Test.AccessDenied, Test.Gone. ProgIDs match without regard to case, and an unknown
one fails as on Windows, with CO_E_CLASSSTRING ("Invalid class string"). An unknown member name fails
with DISP_E_UNKNOWNNAME, setting a read-only property with DISP_E_MEMBERNOTFOUND.

Each use (create, call, get, set) is appended to LOG and, when the environment names a file in
AAI_COM_LOG, written there as one JSON line.
"""

from __future__ import annotations

import datetime
import decimal
import json
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pythoncom
from pywintypes import ExcepInfo, com_error

REGDB_E_CLASSNOTREG = 0x80040154
CO_E_CLASSSTRING = 0x800401F3
CO_E_NOTINITIALIZED = 0x800401F0
CO_E_SERVER_EXEC_FAILURE = 0x80080005
RPC_S_SERVER_UNAVAILABLE = 0x800706BA
RPC_E_WRONG_THREAD = 0x8001010E
E_ACCESSDENIED = 0x80070005
E_FAIL = 0x80004005
DISP_E_UNKNOWNNAME = 0x80020006
DISP_E_MEMBERNOTFOUND = 0x80020003
DISP_E_EXCEPTION = 0x80020009
DISP_E_TYPEMISMATCH = 0x80020005

LOG: list[dict[str, Any]] = []
RELEASE = threading.Event()
"""Test.Blocking's Wait() returns once this is set."""

_lock = threading.Lock()
_temp_names = {"issued": 0}


def signed(hresult: int) -> int:
    """An HRESULT as pywin32 reports it: a signed 32-bit int."""
    return hresult - (1 << 32) if hresult >= 1 << 31 else hresult


def error(hresult: int, text: str, excepinfo: ExcepInfo | None = None, argerror: int | None = None) -> com_error:
    return com_error(signed(hresult), text, excepinfo, argerror)


def record(entry: dict[str, Any]) -> None:
    with _lock:
        LOG.append(entry)
        path = os.environ.get("AAI_COM_LOG")
        if path:
            with Path(path).open("a", encoding="utf-8") as log:
                log.write(json.dumps(entry) + "\n")


def reset() -> None:
    with _lock:
        LOG.clear()
        _temp_names["issued"] = 0
    RELEASE.clear()


class ComObject:
    """Late-bound dispatch: members are found by name when used; plain Python attributes stay private."""

    progid: ClassVar[str]
    methods: ClassVar[Mapping[str, str]] = {}
    """COM method name → the Python method implementing it."""
    properties: ClassVar[Mapping[str, Any]] = {}
    """Property names and their initial values."""
    readonly: ClassVar[frozenset[str]] = frozenset()
    pywin32_style: ClassVar[bool] = False
    """Unknown names raise AttributeError, as pywin32's CDispatch wrapper does, instead of com_error."""

    def __init__(self) -> None:
        object.__setattr__(self, "_values", dict(self.properties))
        object.__setattr__(self, "_thread", threading.get_ident())

    def __repr__(self) -> str:
        return f"<COMObject {self.progid}>"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        self._check()
        if name in self.methods:
            implementation: Callable[..., Any] = getattr(self, self.methods[name])

            def method(*args: Any) -> Any:
                self._check()
                record({"op": "call", "object": self.progid, "method": name, "args": list(args)})
                return implementation(*args)

            return method
        values: dict[str, Any] = object.__getattribute__(self, "_values")
        if name in values:
            record({"op": "get", "object": self.progid, "property": name})
            return values[name]
        raise self._unknown(name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
            return
        self._check()
        values: dict[str, Any] = object.__getattribute__(self, "_values")
        if name in values and name not in self.readonly:
            record({"op": "set", "object": self.progid, "property": name, "value": value})
            values[name] = value
            return
        if name in values or name in self.methods:
            raise error(DISP_E_MEMBERNOTFOUND, "Member not found.")
        raise self._unknown(name)

    def _unknown(self, name: str) -> Exception:
        if self.pywin32_style:
            return AttributeError(f"{self.progid}.{name}")
        unknown: Exception = error(DISP_E_UNKNOWNNAME, "Unknown name.")
        return unknown

    def _check(self) -> None:
        if not pythoncom.initialised():
            raise error(CO_E_NOTINITIALIZED, "CoInitialize has not been called.")
        if object.__getattribute__(self, "_thread") != threading.get_ident():
            raise error(
                RPC_E_WRONG_THREAD, "The application called an interface that was marshalled for a different thread."
            )


class Outlook(ComObject):
    progid = "Outlook.Application"
    methods: ClassVar[Mapping[str, str]] = {"CreateItem": "create_item"}
    properties: ClassVar[Mapping[str, Any]] = {"Name": "Outlook", "Version": "16.0.0.0"}
    readonly = frozenset({"Name", "Version"})

    def create_item(self, kind: int) -> ComObject:
        if kind != 0:
            raise error(
                DISP_E_EXCEPTION,
                "Exception occurred.",
                (4096, "Microsoft Outlook", "This stand-in creates mail items (0) only.", None, 0, signed(E_FAIL)),
            )
        return MailItem()


class MailItem(ComObject):
    progid = "Outlook.MailItem"
    methods: ClassVar[Mapping[str, str]] = {"Send": "send"}
    properties: ClassVar[Mapping[str, Any]] = {"To": "", "Subject": "", "Body": "", "Sent": False}
    readonly = frozenset({"Sent"})

    def send(self) -> None:
        values: dict[str, Any] = object.__getattribute__(self, "_values")
        if not str(values["To"]).strip():
            raise error(
                DISP_E_EXCEPTION,
                "Exception occurred.",
                (4096, "Microsoft Outlook", "There must be at least one name in the To box.", None, 0, signed(E_FAIL)),
            )
        values["Sent"] = True


class FileSystem(ComObject):
    progid = "Scripting.FileSystemObject"
    methods: ClassVar[Mapping[str, str]] = {
        "GetTempName": "temp_name",
        "BuildPath": "build_path",
        "GetExtensionName": "extension_name",
    }

    def temp_name(self) -> str:
        with _lock:
            _temp_names["issued"] += 1
            return f"rad{_temp_names['issued']:05X}.tmp"

    def build_path(self, path: str, name: str) -> str:
        return path + name if path.endswith(("\\", ":")) else f"{path}\\{name}"

    def extension_name(self, path: str) -> str:
        last = path.rsplit("\\", 1)[-1]
        return last.rsplit(".", 1)[1] if "." in last else ""


class Envelope(ComObject):
    progid = "Test.Envelope"
    methods: ClassVar[Mapping[str, str]] = {"Execute": "execute"}

    def execute(self, request: str) -> str:
        body = json.loads(request)
        if body["tool"] == "refuse":
            return json.dumps({"status": "error", "error": {"type": "PERMISSION_DENIED", "message": "not today"}})
        if body["tool"] == "garbage":
            return "this is not an envelope"
        return json.dumps({"status": "success", "result": {"tool": body["tool"], "params": body["params"]}})


class Values(ComObject):
    progid = "Test.Values"
    methods: ClassVar[Mapping[str, str]] = {
        "Echo": "echo",
        "Now": "now",
        "Array": "array",
        "Money": "money",
        "Bytes": "bytes_",
        "Child": "child",
        "Nothing": "nothing",
        "Json": "json_text",
    }
    properties: ClassVar[Mapping[str, Any]] = {"Value": "", "Count": 3}
    readonly = frozenset({"Count"})

    def echo(self, *args: Any) -> tuple[Any, ...]:
        return args

    def now(self) -> datetime.datetime:
        return datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.UTC)

    def array(self) -> tuple[Any, ...]:
        return (1, "two", (3.5, None))

    def money(self) -> decimal.Decimal:
        return decimal.Decimal("12.3400")

    def bytes_(self) -> memoryview:
        return memoryview(b"\x00\x01\xff")

    def child(self) -> ComObject:
        return Values()

    def nothing(self) -> None:
        return None

    def json_text(self) -> str:
        return '{"a": [1, 2]}'


class Errors(ComObject):
    progid = "Test.Errors"
    methods: ClassVar[Mapping[str, str]] = {"Raise": "raise_", "Fail": "fail"}
    pywin32_style = True

    def raise_(self, hresult: int) -> None:
        if hresult == DISP_E_EXCEPTION:
            info = (0, "Test.Errors", "The operation failed on purpose.", None, 0, signed(E_FAIL))
            raise error(hresult, "Exception occurred.", info)
        if hresult == DISP_E_TYPEMISMATCH:
            raise error(hresult, "Type mismatch.", None, 0)  # an index into the arguments, counted from the last
        raise error(hresult, f"Raised 0x{hresult:08X} on request.")

    def fail(self, text: str) -> None:
        raise ValueError(text)


class Blocking(ComObject):
    progid = "Test.Blocking"
    methods: ClassVar[Mapping[str, str]] = {"Wait": "wait"}

    def wait(self) -> str:
        released = RELEASE.wait(60)
        record({"op": "returned", "object": self.progid, "released": released})
        return "released"


CLASSES: Mapping[str, type[ComObject]] = {
    cls.progid.lower(): cls for cls in (Outlook, FileSystem, Envelope, Values, Errors, Blocking)
}
"""By ProgID in lowercase: Windows matches ProgIDs without regard to case."""
FAILING: Mapping[str, tuple[int, str]] = {
    "test.notregistered": (REGDB_E_CLASSNOTREG, "Class not registered"),
    "test.serverfails": (CO_E_SERVER_EXEC_FAILURE, "Server execution failed"),
    "test.accessdenied": (E_ACCESSDENIED, "Access is denied."),
    "test.gone": (RPC_S_SERVER_UNAVAILABLE, "The RPC server is unavailable."),
}


def create(progid: str) -> ComObject:
    """What `win32com.client.Dispatch(progid)` returns."""
    if not pythoncom.initialised():
        raise error(CO_E_NOTINITIALIZED, "CoInitialize has not been called.")
    if progid.lower() in FAILING:
        raise error(*FAILING[progid.lower()])
    cls = CLASSES.get(progid.lower())
    if cls is None:
        raise error(CO_E_CLASSSTRING, "Invalid class string")
    record({"op": "create", "progid": progid})
    return cls()
