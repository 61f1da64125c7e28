"""The one error tree of the gateway.

Every error the gateway reports to an agent is an `AaiError` subclass carrying the protocol code and
type of seed 003 §2.7 (extended to -32015). Transports map these to their wire form in one place
(`aai_gateway.mcp.errors`); nothing else decides codes.
"""

from __future__ import annotations

from typing import ClassVar


class AaiError(Exception):
    """Base of every error an agent can receive. `detail` is one plain sentence for a person."""

    code: ClassVar[int]
    type: ClassVar[str]
    title: ClassVar[str]

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail

    def __str__(self) -> str:
        return f"{self.title}: {self.detail}"


class AutomationFailed(AaiError):
    code, type, title = -32001, "AUTOMATION_FAILED", "Automation failed"


class AppNotFound(AaiError):
    code, type, title = -32002, "APP_NOT_FOUND", "App not found"


class ToolNotFound(AaiError):
    code, type, title = -32003, "TOOL_NOT_FOUND", "Tool not found"


class PermissionDenied(AaiError):
    code, type, title = -32004, "PERMISSION_DENIED", "Permission denied"


class InvalidParams(AaiError):
    code, type, title = -32005, "INVALID_PARAMS", "Invalid parameters"


class AutomationNotSupported(AaiError):
    code, type, title = -32006, "AUTOMATION_NOT_SUPPORTED", "Automation not supported"


class AaiJsonInvalid(AaiError):
    code, type, title = -32007, "AAI_JSON_INVALID", "Descriptor invalid"


class Timeout(AaiError):
    code, type, title = -32008, "TIMEOUT", "Timed out"


class AppNotRunning(AaiError):
    code, type, title = -32009, "APP_NOT_RUNNING", "App not running"


class ScriptParseError(AaiError):
    code, type, title = -32010, "SCRIPT_PARSE_ERROR", "Script does not compile"


class AuthRequired(AaiError):
    code, type, title = -32011, "AUTH_REQUIRED", "Sign-in required"


class AuthExpired(AaiError):
    code, type, title = -32012, "AUTH_EXPIRED", "Sign-in expired"


class ApiRequestFailed(AaiError):
    code, type, title = -32013, "API_REQUEST_FAILED", "API request failed"


class AuthConfigInvalid(AaiError):
    code, type, title = -32014, "AUTH_CONFIG_INVALID", "Auth configuration invalid"


class ConsentRequired(AaiError):
    code, type, title = -32015, "CONSENT_REQUIRED", "Consent required"


ALL_ERRORS: tuple[type[AaiError], ...] = (
    AutomationFailed,
    AppNotFound,
    ToolNotFound,
    PermissionDenied,
    InvalidParams,
    AutomationNotSupported,
    AaiJsonInvalid,
    Timeout,
    AppNotRunning,
    ScriptParseError,
    AuthRequired,
    AuthExpired,
    ApiRequestFailed,
    AuthConfigInvalid,
    ConsentRequired,
)


class ConfigError(Exception):
    """The gateway's own configuration is unusable; raised before anything is served."""
