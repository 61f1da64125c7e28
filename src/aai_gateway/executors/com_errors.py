"""COM failures as the gateway's errors: one table from HRESULT to error type and sentence.

pywin32 raises `pywintypes.com_error(hresult, strerror, excepinfo, argerror)`, the HRESULT as a signed
32-bit int and `excepinfo` None or `(wcode, source, description, helpfile, helpcontext, scode)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aai_gateway.errors import AaiError, AppNotFound, AppNotRunning, AutomationFailed, PermissionDenied

BUSY = "{progid} is busy (a dialog may be open); close it and try again"
NO_MEMBER = "{where}: {object} has no member '{member}'"


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    error: type[AaiError]
    says: str
    """A sentence with any of {progid}, {where}, {object}, {member}, {source}, {description}, {argument}."""


RULES: dict[int, Rule] = {
    0x80040154: Rule(
        "REGDB_E_CLASSNOTREG", AppNotFound, "no COM class is registered for ProgID '{progid}'; is the app installed?"
    ),
    0x800401F3: Rule(
        "CO_E_CLASSSTRING",
        AppNotFound,
        "Windows knows no ProgID '{progid}' (invalid class string); is the app installed?",
    ),
    0x80080005: Rule(
        "CO_E_SERVER_EXEC_FAILURE", AppNotRunning, "{progid} could not be started (server execution failed)"
    ),
    0x800706BA: Rule(
        "RPC_S_SERVER_UNAVAILABLE",
        AppNotRunning,
        "{progid} is not reachable (the RPC server is unavailable); it may have quit",
    ),
    0x80010108: Rule("RPC_E_DISCONNECTED", AppNotRunning, "{progid} disconnected during {where}; it may have quit"),
    0x80010007: Rule("RPC_E_SERVER_DIED", AppNotRunning, "{progid} quit or crashed during {where}"),
    0x80070005: Rule(
        "E_ACCESSDENIED",
        PermissionDenied,
        "Windows refused access to {progid} (access denied); the gateway and the app may run with different rights",
    ),
    0x8001010A: Rule("RPC_E_SERVERCALL_RETRYLATER", AutomationFailed, BUSY),
    0x80010001: Rule("RPC_E_CALL_REJECTED", AutomationFailed, BUSY),
    0x80020006: Rule("DISP_E_UNKNOWNNAME", AutomationFailed, NO_MEMBER),
    0x80020003: Rule("DISP_E_MEMBERNOTFOUND", AutomationFailed, NO_MEMBER),
    0x80020009: Rule("DISP_E_EXCEPTION", AutomationFailed, "{where}: {source} reported an error: {description}"),
    0x80020005: Rule(
        "DISP_E_TYPEMISMATCH", AutomationFailed, "{where}: {member} refused argument {argument} (type mismatch)"
    ),
    0x8002000E: Rule(
        "DISP_E_BADPARAMCOUNT", AutomationFailed, "{where}: {member} takes a different number of arguments"
    ),
}
"""Unsigned HRESULT → what the agent is told; anything else is AutomationFailed with the HRESULT in hex."""


class NoMember(Exception):
    """A COM object does not know a member name (what pywin32's dynamic dispatch reports as AttributeError)."""


@dataclass(frozen=True, slots=True)
class Site:
    """Where a failure happened, for the sentence."""

    progid: str
    where: str
    object: str = ""
    member: str = ""
    arguments: int = 0
    """How many arguments the call passed (COM counts a bad argument from the last one)."""


def unsigned(hresult: int) -> int:
    """pywin32 gives HRESULTs as signed 32-bit ints (-2147221164); the tables use 0x80040154."""
    return hresult & 0xFFFFFFFF


def from_com_error(args: Sequence[Any], site: Site) -> AaiError:
    """The error for a `com_error`'s args `(hresult, strerror, excepinfo, argerror)`."""
    hresult = unsigned(args[0]) if args and isinstance(args[0], int) else 0
    text = str(args[1]) if len(args) > 1 and args[1] else "no description"
    info = args[2] if len(args) > 2 and isinstance(args[2], tuple) else ()
    argerror = args[3] if len(args) > 3 and isinstance(args[3], int) else None
    rule = RULES.get(hresult)
    if rule is None:
        return AutomationFailed(f"{site.where}: COM error 0x{hresult:08X}: {text}")
    source = info[1] if len(info) > 1 and info[1] else site.progid
    description = info[2] if len(info) > 2 and info[2] else text
    scode = info[5] if len(info) > 5 and isinstance(info[5], int) and info[5] else None
    detail = rule.says.format(
        progid=site.progid,
        where=site.where,
        object=site.object or site.progid,
        member=site.member,
        source=source,
        description=str(description).strip(),
        argument=site.arguments - argerror if argerror is not None and 0 <= argerror < site.arguments else "?",
    )
    if scode is not None and hresult == 0x80020009:
        detail += f" (0x{unsigned(scode):08X})"
    return rule.error(detail)


def from_exception(exc: BaseException, site: Site, com_error: type[BaseException]) -> AaiError:
    """Any exception a COM step raised: `com_error` by the table, `NoMember`, or the exception's own text."""
    if isinstance(exc, com_error):
        return from_com_error(exc.args, site)
    if isinstance(exc, NoMember):
        return AutomationFailed(
            NO_MEMBER.format(where=site.where, object=site.object or site.progid, member=site.member)
        )
    return AutomationFailed(f"{site.where}: {type(exc).__name__}: {exc}")
