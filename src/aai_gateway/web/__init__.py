"""The web UI at /ui: server-rendered pages behind a login token, for the user of `aai-gateway --web`."""

from aai_gateway.web.app import UI_PATH, build_ui
from aai_gateway.web.security import TOKEN_FILE, Access

__all__ = ["TOKEN_FILE", "UI_PATH", "Access", "build_ui"]
