"""Where secrets live: the OS keyring, else a file only the user can read, with a loud warning.

The keyring backend is chosen explicitly for the host (Secret Service on Linux, the Keychain on
macOS, the Credential Manager on Windows), never by keyring's own priority list, so keyring's
plaintext or `fail` backends are never picked silently. Keys are `"<site>|<kind>"`: the origin a
secret is for (`https://api.example.com`) and `oauth` (a JSON token set) or `api_key`.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

from keyring.backend import KeyringBackend
from keyring.errors import KeyringError

from aai_gateway import paths
from aai_gateway.auth.secret_file import FILE_NAME, FileStore
from aai_gateway.config import Settings
from aai_gateway.errors import AuthConfigInvalid

log = logging.getLogger("aai_gateway.auth")

SERVICE = "aai-gateway"
"""The keyring service name every secret is stored under; the key is the item's user name."""

PROBE_TIMEOUT = 5.0
"""Seconds a keyring may take to answer whether it is usable before the file is used instead."""

_warned: set[str] = set()

_one_at_a_time = threading.Lock()
"""Held around every keyring operation in this process. gnome-keyring 42 (Debian 12) answers
NoSuchObject at random, and can abort, when several connections use it at once: eight calls
refreshing one sign-in together were enough."""


class SecretStore(Protocol):
    name: str

    def get(self, key: str) -> str | None: ...

    def set(self, key: str, value: str) -> None: ...

    def delete(self, key: str) -> None: ...


def secret_key(site: str, kind: str) -> str:
    """`"<site>|<kind>"`, e.g. `"https://api.example.com|oauth"`."""
    return f"{site}|{kind}"


class KeyringStore:
    """One keyring backend, used directly."""

    def __init__(self, backend: KeyringBackend, name: str) -> None:
        self._backend = backend
        self.name = name

    def _fail(self, action: str, exc: Exception) -> AuthConfigInvalid:
        return AuthConfigInvalid(f"the keyring ({self.name}) could not {action} a secret: {type(exc).__name__}")

    @contextmanager
    def _turn(self, action: str) -> Iterator[None]:
        """The keyring to this thread alone while `action` runs; its errors as AuthConfigInvalid."""
        if not _one_at_a_time.acquire(timeout=PROBE_TIMEOUT):
            raise AuthConfigInvalid(
                f"the keyring ({self.name}) could not {action} a secret: an earlier request to it has waited "
                f"more than {PROBE_TIMEOUT:g} s (an unlock prompt nobody answered?); answer or dismiss it, "
                "then try again"
            )
        try:
            yield
        except KeyringError as exc:
            raise self._fail(action, exc) from None
        finally:
            _one_at_a_time.release()

    def get(self, key: str) -> str | None:
        with self._turn("read"):
            return self._backend.get_password(SERVICE, key)

    def set(self, key: str, value: str) -> None:
        with self._turn("store"):
            self._backend.set_password(SERVICE, key, value)

    def delete(self, key: str) -> None:
        with self._turn("delete"):
            if self._backend.get_password(SERVICE, key) is not None:
                self._backend.delete_password(SERVICE, key)


def _secret_service() -> tuple[KeyringBackend, str]:
    """The Secret Service (gnome-keyring, KeePassXC, KWallet ≥ 5.97), if its default keyring is unlocked."""
    import secretstorage
    from keyring.backends.SecretService import Keyring
    from secretstorage.exceptions import ItemNotFoundException

    try:
        connection = secretstorage.dbus_init()
    except Exception as exc:
        raise LookupError(f"no DBus session bus ({exc})") from None
    try:
        if not secretstorage.check_service_availability(connection):
            raise LookupError("no Secret Service on the session bus (gnome-keyring, KeePassXC or KWallet)")
        try:
            collection = secretstorage.Collection(connection)
        except ItemNotFoundException:
            raise LookupError("the Secret Service has no default keyring") from None
        if collection.is_locked():
            raise LookupError("the default keyring is locked (unlock it, e.g. by signing in to the desktop)")
    finally:
        connection.close()
    return Keyring(), "Secret Service"  # type: ignore[no-untyped-call]


def _macos_keychain() -> tuple[KeyringBackend, str]:
    from keyring.backends.macOS import Keyring

    return Keyring(), "macOS Keychain"  # type: ignore[no-untyped-call]


def _windows_credentials() -> tuple[KeyringBackend, str]:
    from keyring.backends.Windows import WinVaultKeyring

    return WinVaultKeyring(), "Windows Credential Manager"  # type: ignore[no-untyped-call]


def _native() -> tuple[KeyringBackend, str]:
    """The host's own keyring, checked by reading one (absent) item; LookupError says why not."""
    host = paths.host_platform()
    finder: Callable[[], tuple[KeyringBackend, str]] = {
        "linux": _secret_service,
        "macos": _macos_keychain,
        "windows": _windows_credentials,
    }.get(host, _secret_service)
    backend, name = finder()
    try:
        backend.get_password(SERVICE, "probe|none")
    except Exception as exc:
        raise LookupError(f"the {name} did not answer ({type(exc).__name__}: {exc})") from None
    return backend, name


def _native_within(timeout: float) -> tuple[KeyringBackend, str]:
    """`_native()` in a worker thread: a keyring that hangs (an unanswered unlock prompt) counts as absent."""
    outcome: list[tuple[KeyringBackend, str] | BaseException] = []

    def run() -> None:
        if not _one_at_a_time.acquire(timeout=timeout):
            return
        try:
            outcome.append(_native())
        except BaseException as exc:  # handed to the caller
            outcome.append(exc)
        finally:
            _one_at_a_time.release()

    worker = threading.Thread(target=run, name="aai-keyring-probe", daemon=True)
    worker.start()
    worker.join(timeout)
    if not outcome:
        raise LookupError(f"the keyring did not answer within {timeout:g} s")
    result = outcome[0]
    if isinstance(result, LookupError):
        raise result
    if isinstance(result, BaseException):
        raise LookupError(f"the keyring failed ({type(result).__name__}: {result})")
    return result


def _warn(store: FileStore, reason: str) -> None:
    message = (
        f"WARNING: no OS keyring is usable ({reason}); aai-gateway keeps sign-in tokens and API keys in "
        f"{store.path}, a file only you can read (mode 0600). Anyone with your account or your backups can "
        "read it. Start or unlock your keyring (Secret Service, Keychain, Credential Manager) to keep them there."
    )
    key = str(store.path)
    if key not in _warned:
        _warned.add(key)
        log.warning("%s", message)
        print(f"\n{'!' * 78}\n{message}\n{'!' * 78}\n", file=sys.stderr, flush=True)


def keyring_store(*, probe_timeout: float = PROBE_TIMEOUT) -> KeyringStore:
    """The OS keyring if it answers; LookupError says why not (no fallback, no warning)."""
    backend, name = _native_within(probe_timeout)
    return KeyringStore(backend, name)


def open_store(settings: Settings, *, probe_timeout: float = PROBE_TIMEOUT) -> SecretStore:
    """The OS keyring when it answers, else `<aai_home>/secrets.json` (0600) with a loud warning."""
    try:
        return keyring_store(probe_timeout=probe_timeout)
    except LookupError as exc:
        store = FileStore(settings.aai_home / FILE_NAME)
        _warn(store, str(exc))
        return store
