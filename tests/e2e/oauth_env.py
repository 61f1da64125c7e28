"""Real parts for the sign-in tests: oidc-provider on 127.0.0.1, gnome-keyring on a private bus,
a home with a web app whose descriptor points at the provider, and a 'browser' that follows redirects.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import secretstorage
from jeepney.io.blocking import DBusConnection, open_dbus_connection

from tests.support import ROOT, Bus, stop, wait_until

OAUTH_DIR = ROOT / "tests" / "oauth"
CLIENT_ID = "aai-gateway-test"
CLIENT_SECRET = "confidential-client-secret-5b1d"
APP_ID = "com.example.notes"
KEYRING_PASSWORD = "test-keyring-password"


class OAuthServer:
    """`node tests/oauth/server.mjs`: prints `ready <issuer>` once it listens."""

    def __init__(self, workdir: Path, access_token_ttl: int = 600) -> None:
        if not (OAUTH_DIR / "node_modules" / "oidc-provider").is_dir():
            raise RuntimeError(
                "oidc-provider is not installed: run `npm install --prefix tests/oauth` (scripts/test does)"
            )
        node = shutil.which("node")
        assert node, "node is not installed"
        workdir.mkdir(parents=True, exist_ok=True)
        self.log = workdir / "oidc-provider.log"
        env = dict(os.environ, PORT="0", CLIENT_ID=CLIENT_ID, CLIENT_SECRET=CLIENT_SECRET,
                   ACCESS_TOKEN_TTL=str(access_token_ttl))  # fmt: skip
        with self.log.open("w") as log:
            self.proc: subprocess.Popen[str] = subprocess.Popen(
                [node, str(OAUTH_DIR / "server.mjs")], stdout=subprocess.PIPE, stderr=log, env=env, text=True
            )
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 30)
        line = self.proc.stdout.readline().strip() if ready else ""
        if not line.startswith("ready "):
            stop(self.proc)
            raise RuntimeError(f"oidc-provider did not start: {line!r}; {self.log.read_text()}")
        self.issuer = line.split(" ", 1)[1]

    def stop(self) -> None:
        stop(self.proc)


class GnomeKeyring:
    """gnome-keyring-daemon (secrets only) on `bus`, with a login keyring created and unlocked from stdin."""

    def __init__(self, bus: Bus, workdir: Path) -> None:
        self.bus = bus
        self.data = workdir / "keyring-data"
        control = workdir / "keyring-control"
        for folder in (self.data, control):
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        env = bus.env(XDG_DATA_HOME=str(self.data), XDG_RUNTIME_DIR=str(control), HOME=str(workdir))
        self.proc: subprocess.Popen[bytes] = subprocess.Popen(
            [
                "gnome-keyring-daemon",
                "--foreground",
                "--unlock",
                "--components=secrets",
                f"--control-directory={control}",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        assert self.proc.stdin is not None
        self.proc.stdin.write(KEYRING_PASSWORD.encode())
        self.proc.stdin.close()
        wait_until(self._ready, 20, "gnome-keyring's unlocked default collection")

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"gnome-keyring-daemon exited with {self.proc.returncode}")
        if not self.bus.has_owner("org.freedesktop.secrets"):
            return False
        with self.connection() as connection:
            try:
                return not secretstorage.Collection(connection).is_locked()
            except secretstorage.exceptions.ItemNotFoundException:
                return False

    def connection(self) -> DBusConnection:
        return open_dbus_connection(self.bus.address)

    def items(self, key: str) -> list[str]:
        """The secrets stored under the gateway's service for `key`, read straight from the Secret Service."""
        with self.connection() as connection:
            found = secretstorage.search_items(connection, {"service": "aai-gateway", "username": key})
            return [item.get_secret().decode() for item in found]

    def token_set(self, site: str) -> dict[str, Any] | None:
        found = self.items(f"{site}|oauth")
        assert len(found) <= 1, found
        return json.loads(found[0]) if found else None

    def stop(self) -> None:
        stop(self.proc)


def write_home(home: Path, issuer: str, *, app_id: str = APP_ID, client: dict[str, Any] | None = None) -> Path:
    """A home whose `~/.aai` has the config (loopback http allowed, the app's client) and a camelCase
    descriptor for a web app on the provider; returns the AAI home."""
    aai = home / ".aai"
    (aai / app_id).mkdir(parents=True, exist_ok=True)
    config = {"web": {"allowHttpLoopback": True}, "apps": {app_id: client or {"clientId": CLIENT_ID}}}
    (aai / "config.json").write_text(json.dumps(config))
    descriptor = {
        "schemaVersion": "1.0",
        "version": "1.0.0",
        "platform": "web",
        "app": {"id": app_id, "name": {"en": "Notes"}, "defaultLang": "en", "description": "Hosted notes"},
        "execution": {"type": "http", "baseUrl": issuer},
        "auth": {
            "type": "oauth2",
            "oauth2": {
                "authorizationEndpoint": f"{issuer}/auth",
                "tokenEndpoint": f"{issuer}/token",
                "scopes": ["openid", "offline_access"],
                "pkce": {"method": "S256"},
            },
        },
        "tools": [
            {
                "name": "me",
                "description": "Who am I",
                "parameters": {"type": "object", "properties": {}},
                "execution": {"path": "/me", "method": "GET"},
            }
        ],
    }
    (aai / app_id / "aai.json").write_text(json.dumps(descriptor))
    return aai


def follow(url: str) -> httpx2.Response:
    """What a browser does with the authorization URL: follow redirects through the provider's
    (automatic) sign-in and consent back to the gateway's loopback listener."""
    with httpx2.Client(follow_redirects=True, timeout=20) as browser:
        page = browser.get(url)
    assert page.status_code == 200, (page.status_code, page.text[:500])
    assert "Signed in to" in page.text, page.text[:500]
    return page


def answer_directly(url: str, **params: str) -> httpx2.Response:
    """Skip the provider: send `params` (plus the request's own state, unless given) to the loopback listener."""
    query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    params.setdefault("state", query["state"])
    return httpx2.get(f"{query['redirect_uri']}?{urlencode(params)}", timeout=10)


def wait_for_line(proc: subprocess.Popen[bytes], marker: str, timeout: float) -> tuple[str, list[str]]:
    """Read `proc`'s stderr until a line containing `marker`; returns it and every line read."""
    assert proc.stderr is not None
    fd = proc.stderr.fileno()
    buffer = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        chunk = os.read(fd, 65536) if ready else b""
        if not chunk:
            break
        buffer += chunk
        lines = buffer.decode(errors="replace").splitlines(keepends=True)
        for line in lines:
            if marker in line and line.endswith("\n"):
                return line.strip(), lines
    raise TimeoutError(f"no line with {marker!r} on stderr; got {buffer.decode(errors='replace')!r}")
