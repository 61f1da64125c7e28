"""What osascript prints on failure, turned into the gateway's errors.

osascript ends a failure with the OSA error number in parentheses, e.g.
`execution error: Mail got an error: Not authorized to send Apple events to Mail. (-1743)` or
`0:41: syntax error: Expected end of line but found identifier. (-2741)`.
"""

from __future__ import annotations

import re

from aai_gateway.errors import (
    AaiError,
    AppNotFound,
    AppNotRunning,
    AutomationFailed,
    PermissionDenied,
    ScriptParseError,
    Timeout,
)

_NUMBER = re.compile(r"\((-?\d+)\)\s*$")
_PREFIX = re.compile(r"^(?:execution error: |(?:(\d+):(\d+): )?syntax error: )")

AUTOMATION_HINT = (
    "allow it in System Settings › Privacy & Security › Automation: the program that runs aai-gateway "
    "(your terminal or agent) needs permission to control this app"
)

ERRORS: dict[int, tuple[type[AaiError], str]] = {
    -1743: (PermissionDenied, AUTOMATION_HINT),
    -1744: (PermissionDenied, AUTOMATION_HINT),
    -10004: (PermissionDenied, "macOS refused the command (privilege violation)"),
    -128: (PermissionDenied, "the user cancelled"),
    -1712: (Timeout, "the app did not answer the Apple Event in time"),
    -600: (AppNotRunning, "the app is not running and could not be started"),
    -609: (AppNotRunning, "the connection to the app was lost"),
    -10810: (AppNotRunning, "macOS could not launch the app"),
    -10814: (AppNotFound, "no application with that name or bundle id is installed"),
    -2740: (ScriptParseError, "the tool's script template does not compile"),
    -2741: (ScriptParseError, "the tool's script template does not compile"),
    -2750: (ScriptParseError, "the tool's script template does not compile"),
}
"""OSA error number → the error raised and what it means for the person reading it."""


def translate(stderr: str, exit_code: int, what: str) -> AaiError:
    """The error for a failed osascript run of `what` (e.g. "Mail's send_email")."""
    text = stderr.strip()
    last = text.splitlines()[-1] if text else ""
    found = _NUMBER.search(last)
    number = int(found.group(1)) if found else None
    body = last[: found.start()].rstrip() if found else last
    prefix = _PREFIX.match(body)
    message = body[prefix.end() :] if prefix else body
    if prefix and prefix.group(1):
        message += f" (characters {prefix.group(1)}:{prefix.group(2)} of the script osascript was given)"
    message = message or f"osascript exited with {exit_code}"
    if "Can’t get application" in message or "Can't get application" in message:
        return AppNotFound(f"{what}: no such application is installed: {message}")
    if number in ERRORS:
        cls, meaning = ERRORS[number]
        return cls(f"{what}: {meaning}: {message} ({number})")
    if prefix and prefix.group(0).endswith("syntax error: "):
        return ScriptParseError(f"{what}: the tool's script template does not compile: {message}")
    suffix = f" ({number})" if number is not None else ""
    return AutomationFailed(f"{what} failed: {message}{suffix}")
