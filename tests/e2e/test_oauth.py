"""Sign-in for real: oidc-provider on 127.0.0.1, gnome-keyring on a private bus, the installed command.

The 'browser' is an httpx2 client following the provider's redirects (its interactions sign in and
consent on their own) back to the gateway's loopback listener.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import stat
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import httpx2
import pytest
import secretstorage
from mcp import MCPError

from aai_gateway import logs
from aai_gateway.auth import oauth
from aai_gateway.auth.provider import WebAuth, web_auth
from aai_gateway.auth.secret_file import FileStore
from aai_gateway.auth.secrets import KeyringStore, open_store, secret_key
from aai_gateway.auth.tokens import TokenSet
from aai_gateway.config import Settings, load_settings
from aai_gateway.discovery import scan
from aai_gateway.errors import AuthConfigInvalid, AuthExpired, AuthRequired
from tests.e2e.mcp_client import stdio_session
from tests.e2e.oauth_env import (
    APP_ID,
    CLIENT_ID,
    CLIENT_SECRET,
    GnomeKeyring,
    OAuthServer,
    answer_directly,
    follow,
    wait_for_line,
    write_home,
)
from tests.support import Bus, gateway_command

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

LOGIN = f"aai-gateway auth login {APP_ID}"


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthServer]:
    server = OAuthServer(tmp_path_factory.mktemp("oidc-provider"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def keyring(bus: Bus, tmp_path: Path) -> Iterator[GnomeKeyring]:
    daemon = GnomeKeyring(bus, tmp_path / "keyring")
    try:
        yield daemon
    finally:
        daemon.stop()


@pytest.fixture
def home(tmp_path: Path, provider: OAuthServer) -> Path:
    home = tmp_path / "home"
    write_home(home, provider.issuer)
    return home


@pytest.fixture
def session_bus(bus: Bus, monkeypatch: pytest.MonkeyPatch) -> Bus:
    """The private bus as this process's session bus (the keyring library reads the environment)."""
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", bus.address)
    return bus


@pytest.fixture
def gateway_logs() -> Iterator[None]:
    """Undo `logs.configure` afterwards, so later tests see the default logging again."""
    try:
        yield
    finally:
        logs.reset()


def settings_of(home: Path, **env: str) -> Settings:
    return load_settings({"HOME": str(home), "AAI_PLATFORM": "linux", **env})


def web_of(settings: Settings, app_id: str = APP_ID) -> WebAuth:
    found = web_auth(scan(settings).apps[app_id])
    assert found is not None
    return found


async def sign_in(settings: Settings, web: WebAuth) -> TokenSet:
    return await oauth.login(settings, web.app_id, web.site, web.auth, open_browser=follow, timeout=60)


def userinfo(issuer: str, token: str) -> httpx2.Response:
    return httpx2.get(f"{issuer}/me", headers={"Authorization": f"Bearer {token}"}, timeout=10)


def run_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([gateway_command(), *args], env=env, capture_output=True, text=True, timeout=60, check=False)


async def cli_login(env: dict[str, str], *options: str) -> tuple[str, str, str]:
    """`aai-gateway auth login APP --no-browser`, with this test as the browser: (url, stdout, stderr)."""
    proc = subprocess.Popen(
        [gateway_command(), *options, "auth", "login", APP_ID, "--no-browser", "--timeout", "60"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    url, seen = wait_for_line(proc, "/auth?", 30)
    await asyncio.to_thread(follow, url)
    out, err = (b.decode() for b in proc.communicate(timeout=30))
    assert proc.returncode == 0, err
    return url, out, "".join(seen) + err


async def test_login_stores_tokens_in_the_secret_service(
    session_bus: Bus, keyring: GnomeKeyring, home: Path, provider: OAuthServer
) -> None:
    settings = settings_of(home)
    web = web_of(settings)
    assert web.site == provider.issuer
    before = time.time()
    tokens = await sign_in(settings, web)

    stored = keyring.token_set(web.site)
    assert stored is not None
    assert stored["access_token"] == tokens.access_token
    assert stored["refresh_token"] == tokens.refresh_token
    assert stored["token_type"] == "Bearer"
    assert before + 590 < stored["expires_at"] < time.time() + 610
    assert set(stored["scope"].split()) >= {"openid"}
    assert not (settings.aai_home / "secrets.json").exists()

    assert await oauth.access_token(settings, APP_ID, web.site, web.auth) == tokens.access_token
    assert userinfo(provider.issuer, tokens.access_token).json()["sub"] == "test-user"
    status = await oauth.status(settings, APP_ID, web.site)
    assert (status.signed_in, status.store, status.refreshable) == (True, "Secret Service", True)
    assert isinstance(open_store(settings), KeyringStore)


async def test_expired_token_is_refreshed_and_a_401_forces_a_refresh(
    session_bus: Bus, keyring: GnomeKeyring, home: Path, provider: OAuthServer
) -> None:
    settings = settings_of(home)
    web = web_of(settings)
    first = await sign_in(settings, web)
    store = open_store(settings)
    store.set(secret_key(web.site, "oauth"), first.with_expiry(time.time() - 5).to_json())

    fresh = await oauth.access_token(settings, APP_ID, web.site, web.auth)
    assert fresh != first.access_token
    stored = keyring.token_set(web.site)
    assert stored is not None
    assert stored["access_token"] == fresh
    assert stored["refresh_token"] not in (None, first.refresh_token)  # rotated by the provider
    assert stored["expires_at"] > time.time() + 500
    assert userinfo(provider.issuer, fresh).status_code == 200

    # Within a minute of expiry counts as expired.
    store.set(
        secret_key(web.site, "oauth"), TokenSet.from_json(json.dumps(stored)).with_expiry(time.time() + 30).to_json()
    )
    soon = await oauth.access_token(settings, APP_ID, web.site, web.auth)
    assert soon != fresh

    forced = await oauth.access_token(settings, APP_ID, web.site, web.auth, force_refresh=True)
    assert forced != soon
    assert userinfo(provider.issuer, forced).status_code == 200
    assert await oauth.access_token(settings, APP_ID, web.site, web.auth) == forced


async def test_concurrent_calls_refresh_once(
    session_bus: Bus, keyring: GnomeKeyring, home: Path, provider: OAuthServer
) -> None:
    """Refresh tokens rotate and are single-use: eight calls at once must share one refresh."""
    settings = settings_of(home)
    web = web_of(settings)
    first = await sign_in(settings, web)
    open_store(settings).set(secret_key(web.site, "oauth"), first.with_expiry(time.time() - 5).to_json())
    tokens = await asyncio.gather(*(oauth.access_token(settings, APP_ID, web.site, web.auth) for _ in range(8)))
    assert len(set(tokens)) == 1
    assert tokens[0] != first.access_token
    assert userinfo(provider.issuer, tokens[0]).status_code == 200


def test_many_threads_at_once_share_the_keyring(session_bus: Bus, keyring: GnomeKeyring, tmp_path: Path) -> None:
    """gnome-keyring 42 answers NoSuchObject at random, or aborts, when several connections use it at
    once: every probe, read and write here must still land on the keyring, and the daemon must live."""
    settings = settings_of(tmp_path / "many")
    key = secret_key("https://api.example.com", "oauth")

    def one(turn: int) -> str | None:
        store = open_store(settings)
        assert isinstance(store, KeyringStore)
        if turn % 9 == 0:
            store.set(key, f"value-{turn}")
            return None
        return store.get(key)

    with ThreadPoolExecutor(9) as pool:
        seen = list(pool.map(one, range(9 * 40)))
    assert keyring.proc.poll() is None
    assert {value for value in seen if value is not None} <= {f"value-{turn}" for turn in range(0, 9 * 40, 9)}
    assert open_store(settings).get(key) is not None
    assert not (settings.aai_home / "secrets.json").exists()


async def test_failed_refresh_is_auth_expired_naming_the_command(
    session_bus: Bus, keyring: GnomeKeyring, home: Path
) -> None:
    settings = settings_of(home)
    web = web_of(settings)
    first = await sign_in(settings, web)
    broken = replace(first, refresh_token="not-a-refresh-token-the-provider-issued", expires_at=time.time() - 5)
    open_store(settings).set(secret_key(web.site, "oauth"), broken.to_json())
    with pytest.raises(AuthExpired) as caught:
        await oauth.access_token(settings, APP_ID, web.site, web.auth)
    assert LOGIN in caught.value.detail
    assert "invalid_grant" in caught.value.detail
    assert "not-a-refresh-token" not in caught.value.detail
    assert first.access_token not in caught.value.detail

    no_refresh = replace(first, refresh_token=None, expires_at=time.time() - 5)
    open_store(settings).set(secret_key(web.site, "oauth"), no_refresh.to_json())
    with pytest.raises(AuthExpired, match="granted no refresh token"):
        await oauth.access_token(settings, APP_ID, web.site, web.auth)


async def test_never_signed_in_is_auth_required_naming_the_command(
    session_bus: Bus, keyring: GnomeKeyring, home: Path
) -> None:
    settings = settings_of(home)
    web = web_of(settings)
    with pytest.raises(AuthRequired) as caught:
        await oauth.access_token(settings, APP_ID, web.site, web.auth)
    assert caught.value.code == -32011
    assert f"run `{LOGIN}`" in caught.value.detail
    assert not (await oauth.status(settings, APP_ID, web.site)).signed_in


async def test_missing_client_id_is_auth_config_invalid(session_bus: Bus, keyring: GnomeKeyring, home: Path) -> None:
    config = home / ".aai" / "config.json"
    config.write_text(json.dumps({"web": {"allowHttpLoopback": True}}))
    settings = settings_of(home)
    web = web_of(settings)
    for attempt in (
        oauth.access_token(settings, APP_ID, web.site, web.auth),
        oauth.login(settings, APP_ID, web.site, web.auth, open_browser=follow),
    ):
        with pytest.raises(AuthConfigInvalid, match=f"apps.{APP_ID}.clientId"):
            await attempt


async def test_wrong_state_is_ignored_and_refusals_are_reported(
    session_bus: Bus, keyring: GnomeKeyring, home: Path
) -> None:
    settings = settings_of(home)
    web = web_of(settings)
    answers: list[httpx2.Response] = []

    def forged(url: str) -> None:
        answers.append(answer_directly(url, code="stolen-code", state="forged-state"))

    with pytest.raises(AuthRequired, match="did not complete within 2 s"):
        await oauth.login(settings, APP_ID, web.site, web.auth, open_browser=forged, timeout=2)
    assert answers[0].status_code == 400
    assert "not the one aai-gateway is waiting for" in answers[0].text

    def denied(url: str) -> None:
        answers.append(answer_directly(url, error="access_denied", error_description="<b>no</b> thanks"))

    with pytest.raises(AuthRequired, match=r"refused \(access_denied: <b>no</b> thanks\)"):
        await oauth.login(settings, APP_ID, web.site, web.auth, open_browser=denied, timeout=30)
    assert "&lt;b&gt;no&lt;/b&gt; thanks" in answers[1].text

    def bogus_code(url: str) -> None:
        answers.append(answer_directly(url, code="a-code-the-provider-never-issued"))

    with pytest.raises(AuthRequired, match="the token endpoint answered invalid_grant"):
        await oauth.login(settings, APP_ID, web.site, web.auth, open_browser=bogus_code, timeout=30)
    assert keyring.token_set(web.site) is None


async def test_redirect_port_from_config(
    session_bus: Bus, keyring: GnomeKeyring, tmp_path: Path, provider: OAuthServer
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        home = tmp_path / "fixed-port"
        write_home(home, provider.issuer, client={"clientId": CLIENT_ID, "redirectPort": port})
        settings = settings_of(home)
        web = web_of(settings)
        with pytest.raises(AuthConfigInvalid, match=f"127.0.0.1:{port}.*apps.{APP_ID}.redirectPort"):
            await sign_in(settings, web)
    urls: list[str] = []

    def browse(url: str) -> None:
        urls.append(url)
        follow(url)

    await oauth.login(settings, APP_ID, web.site, web.auth, open_browser=browse, timeout=60)
    assert f"redirect_uri=http%3A%2F%2F127.0.0.1%3A{port}%2Fcallback" in urls[0]


async def test_confidential_client_falls_back_to_client_secret_post(
    session_bus: Bus, keyring: GnomeKeyring, tmp_path: Path, provider: OAuthServer
) -> None:
    """The provider's confidential client takes client_secret_post only: basic is refused, post works."""
    home = tmp_path / "confidential"
    client = {"clientId": f"{CLIENT_ID}-confidential", "clientSecret": {"$env": "NOTES_CLIENT_SECRET"}}
    write_home(home, provider.issuer, client=client)
    settings = settings_of(home, NOTES_CLIENT_SECRET=CLIENT_SECRET)
    web = web_of(settings)
    first = await sign_in(settings, web)
    assert userinfo(provider.issuer, first.access_token).status_code == 200
    refreshed = await oauth.access_token(settings, APP_ID, web.site, web.auth, force_refresh=True)
    assert refreshed != first.access_token

    wrong = settings_of(home, NOTES_CLIENT_SECRET="not-the-secret")
    with pytest.raises(AuthExpired, match="invalid_client"):
        await oauth.access_token(wrong, APP_ID, web.site, web.auth, force_refresh=True)


async def test_cli_login_status_logout(keyring: GnomeKeyring, bus: Bus, home: Path, provider: OAuthServer) -> None:
    env = bus.env(HOME=str(home), AAI_PLATFORM="linux")
    site = provider.issuer

    url, out, err = await cli_login(env)
    assert url.startswith(f"{site}/auth?")
    assert f"Signed in to {site} for {APP_ID}" in out
    assert "Tokens stored in: Secret Service" in out
    stored = keyring.token_set(site)
    assert stored is not None

    status = run_cli(env, "auth", "status", "--json")
    assert status.returncode == 0, status.stderr
    (entry,) = json.loads(status.stdout)
    assert entry["appId"] == APP_ID
    assert (entry["signedIn"], entry["refreshable"], entry["store"]) == (True, True, "Secret Service")
    assert 500 < entry["expiresIn"] <= 600
    text = run_cli(env, "auth", "status", APP_ID)
    assert f"{APP_ID}  {site}  signed in; access token expires in" in text.stdout
    for token in (stored["access_token"], stored["refresh_token"]):
        assert token not in status.stdout + status.stderr + text.stdout + text.stderr + out + err

    logout = run_cli(env, "auth", "logout", APP_ID)
    assert logout.returncode == 0, logout.stderr
    assert f"Signed out of {site} for {APP_ID}" in logout.stdout
    assert keyring.token_set(site) is None
    again = run_cli(env, "auth", "logout", APP_ID)
    assert "nothing to delete" in again.stdout
    after = run_cli(env, "auth", "status")
    assert f"not signed in: run `{LOGIN}`" in after.stdout

    unknown = run_cli(env, "auth", "login", "com.example.nope", "--no-browser")
    assert unknown.returncode == 1
    assert "unknown app 'com.example.nope'" in unknown.stderr


async def mcp_exec(env: dict[str, str], stderr: Path) -> str:
    """Everything an agent gets back from `aai:exec` of the app's `me` tool, success or error."""
    async with stdio_session(env, stderr) as session:
        try:
            result = await session.call_tool("aai_exec", {"app": APP_ID, "tool": "me", "args": {}})
        except MCPError as exc:
            return exc.error.model_dump_json()
        return result.model_dump_json()


@pytest.mark.usefixtures("gateway_logs")
async def test_no_secret_in_anything_the_gateway_wrote(
    session_bus: Bus, keyring: GnomeKeyring, home: Path, provider: OAuthServer, capfd: pytest.CaptureFixture[str]
) -> None:
    """An authenticated run: calls before signing in, a CLI sign-in at debug level, calls through the
    CLI and MCP, a refresh, a refused refresh, the status. No access or refresh token shows in any file
    under HOME, in any output, in what the agent got, or in any error."""
    env = session_bus.env(HOME=str(home), AAI_PLATFORM="linux")
    outputs: list[str] = []

    def call(expect: int) -> str:
        result = run_cli(env, "--log-level", "debug", "call", APP_ID, "me")
        assert result.returncode == expect, result.stderr
        outputs.extend([result.stdout, result.stderr])
        return result.stdout + result.stderr

    assert f"run `{LOGIN}`" in call(1)

    outputs += await cli_login(env, "--log-level", "debug")
    signed_in = keyring.token_set(provider.issuer)
    assert signed_in is not None
    assert '"sub": "test-user"' in call(0)
    agent_got = await mcp_exec(env, home.parent / "mcp-stderr.log")
    assert "test-user" in agent_got or "CONSENT_REQUIRED" in agent_got, agent_got
    outputs.append(agent_got)

    settings = settings_of(home)
    logs.configure("debug", settings.aai_home / "logs")
    web = web_of(settings)
    store = open_store(settings)
    expired = TokenSet.from_json(json.dumps(signed_in)).with_expiry(time.time() - 5)
    store.set(secret_key(web.site, "oauth"), expired.to_json())
    fresh = await oauth.access_token(settings, APP_ID, web.site, web.auth)
    refreshed = keyring.token_set(provider.issuer)
    assert refreshed is not None
    assert refreshed["access_token"] == fresh
    assert '"sub": "test-user"' in call(0)

    # The first refresh token again: the provider sees it reused and revokes the grant.
    errors: list[str] = []
    reused = replace(TokenSet.from_json(json.dumps(refreshed)), expires_at=time.time() - 5)
    store.set(secret_key(web.site, "oauth"), replace(reused, refresh_token=signed_in["refresh_token"]).to_json())
    with pytest.raises(AuthExpired) as caught:
        await oauth.access_token(settings, APP_ID, web.site, web.auth)
    errors += [str(caught.value), repr(caught.value), caught.value.detail]
    assert "-32012 AUTH_EXPIRED" in call(1)
    outputs.append(await mcp_exec(env, home.parent / "mcp-stderr.log"))
    outputs.append((home.parent / "mcp-stderr.log").read_text())

    for args in (("auth", "status", "--json"), ("--log-level", "debug", "auth", "status", APP_ID)):
        result = run_cli(env, *args)
        outputs += [result.stdout, result.stderr]
    captured = capfd.readouterr()
    outputs += [captured.out, captured.err]

    secrets_seen = {
        signed_in["access_token"],
        signed_in["refresh_token"],
        refreshed["access_token"],
        refreshed["refresh_token"],
    }
    written = [p for p in home.rglob("*") if p.is_file()]
    log_text = (settings.aai_home / "logs" / "gateway.log").read_text()
    assert "signed in to" in log_text
    assert "refreshed the access token" in log_text
    for secret in secrets_seen:
        assert len(secret) >= 20
        for path in written:
            assert secret.encode() not in path.read_bytes(), f"a token leaked into {path}"
        for text in outputs + errors:
            assert secret not in text


async def test_file_fallback_when_no_secret_service_answers(
    session_bus: Bus,
    home: Path,
    provider: OAuthServer,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = settings_of(home)
    web = web_of(settings)
    with caplog.at_level(logging.WARNING, logger="aai_gateway"):
        store = open_store(settings)
    assert isinstance(store, FileStore)
    assert store.path == settings.aai_home / "secrets.json"
    assert "no Secret Service on the session bus" in caplog.text
    assert "WARNING: no OS keyring is usable" in capfd.readouterr().err
    open_store(settings)
    assert "WARNING" not in capfd.readouterr().err  # printed once per process

    tokens = await sign_in(settings, web)
    secrets_file = settings.aai_home / "secrets.json"
    assert stat.S_IMODE(secrets_file.stat().st_mode) == 0o600
    assert json.loads(json.loads(secrets_file.read_text())[f"{web.site}|oauth"])["access_token"] == tokens.access_token
    assert await oauth.access_token(settings, APP_ID, web.site, web.auth) == tokens.access_token
    assert not [p for p in settings.aai_home.iterdir() if p.name.startswith(".secrets-")]

    # The CLI says so too, loudly, on stderr.
    status = run_cli(dict(session_bus.env(HOME=str(home), AAI_PLATFORM="linux")), "auth", "status", APP_ID)
    assert "WARNING: no OS keyring is usable" in status.stderr
    assert "signed in" in status.stdout
    assert str(secrets_file) in status.stdout

    # A fresh home: the folder is made 0700 and the file 0600; a file others can read is repaired.
    fresh = FileStore(Path(home.parent / "fresh-aai" / "secrets.json"))
    fresh.set("https://api.example.com|api_key", "k-123")
    assert stat.S_IMODE(fresh.path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(fresh.path.stat().st_mode) == 0o600
    fresh.path.chmod(0o644)
    assert fresh.get("https://api.example.com|api_key") == "k-123"
    assert stat.S_IMODE(fresh.path.stat().st_mode) == 0o600
    fresh.delete("https://api.example.com|api_key")
    assert fresh.get("https://api.example.com|api_key") is None


def test_file_fallback_without_a_session_bus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    store = open_store(settings_of(tmp_path / "nobus"))
    assert isinstance(store, FileStore)
    assert "no DBus session bus" in capfd.readouterr().err


def test_locked_keyring_falls_back_to_the_file(
    session_bus: Bus, keyring: GnomeKeyring, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    with keyring.connection() as connection:
        secretstorage.Collection(connection).lock()
    store = open_store(settings_of(tmp_path / "locked"))
    assert isinstance(store, FileStore)
    assert "the default keyring is locked" in capfd.readouterr().err
