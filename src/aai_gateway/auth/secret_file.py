"""The last resort for secrets: a JSON file only its owner can read, used with a loud warning.

Written atomically (a new 0600 file, then a rename), read back refusing nothing but repairing a mode
that lets others read it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import tempfile
import threading
from pathlib import Path

from aai_gateway.errors import AuthConfigInvalid

log = logging.getLogger("aai_gateway.auth")

FILE_NAME = "secrets.json"

_lock = threading.Lock()


class FileStore:
    """`<aai_home>/secrets.json`: `{key: value}`, mode 0600 in a folder created 0700."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = f"file {path} (readable only by you; no keyring answered)"

    def _read(self) -> dict[str, str]:
        try:
            info = self.path.stat()
            if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO) and os.name == "posix":
                log.warning("%s was readable by others; its mode is now 0600", self.path)
                self.path.chmod(0o600)
            text = self.path.read_text("utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise AuthConfigInvalid(f"cannot read the secret file {self.path}: {exc.strerror or exc}") from exc
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise AuthConfigInvalid(
                f"the secret file {self.path} is not valid JSON (line {exc.lineno}); remove it and sign in again"
            ) from None
        if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
            raise AuthConfigInvalid(f"the secret file {self.path} is not an object of strings; remove it")
        return data

    def _write(self, data: dict[str, str]) -> None:
        folder = self.path.parent
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(prefix=".secrets-", suffix=".tmp", dir=folder)
        except OSError as exc:
            raise AuthConfigInvalid(f"cannot write the secret file {self.path}: {exc.strerror or exc}") from exc
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                Path(temp).chmod(0o600)  # mkstemp makes 0600 already; be explicit
                json.dump(data, out, indent=2, sort_keys=True)
                out.write("\n")
            Path(temp).replace(self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                Path(temp).unlink()
            raise AuthConfigInvalid(f"cannot write the secret file {self.path}: {exc.strerror or exc}") from exc

    def get(self, key: str) -> str | None:
        with _lock:
            return self._read().get(key)

    def set(self, key: str, value: str) -> None:
        with _lock:
            data = self._read()
            data[key] = value
            self._write(data)

    def delete(self, key: str) -> None:
        with _lock:
            data = self._read()
            if data.pop(key, None) is not None:
                self._write(data)
