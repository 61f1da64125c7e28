"""What counts as a secret in a client's server entry: by key, by shape, in an argument or in a URL.

A value is secret when its key names one (`*KEY*`, `*TOKEN*`, `Authorization`, …) or when it looks
like one (a known token prefix, a JWT, a long random string, a URL with a password). An argument is
secret in the forms command lines pass them: `--header "Authorization: Bearer …"` (or `--header=…`,
`-H …`), `--token=…`, the word after `--api-key`, `--password` or `-p`, `API_KEY=…`, a URL holding a
credential, or a token anywhere in it. Each finding comes with the argument masked, for the output.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from aai_gateway.history.redact import secret_key

MASK = "***"

_SECRET_WORDS = re.compile(r"key|token|secret|passw|pwd|auth|credential|cookie|session|private", re.IGNORECASE)
_TOKEN_PREFIX = re.compile(
    r"^(?:sk|pk|rk)[-_][A-Za-z0-9]|^(?:ghp|gho|ghu|ghs|ghr)_|^github_pat_|^glpat-|^xox[abposr]-|^(?:AKIA|ASIA)[A-Z0-9]{12}"
    r"|^AIza[0-9A-Za-z_-]{20}|^ya29\.|^eyJ[A-Za-z0-9_-]{8,}\.|^(?:Bearer|Basic|Token)\s+\S"
)
_TOKEN_INSIDE = re.compile(
    r"(?<![A-Za-z0-9])(?:(?:sk|rk)-(?:[A-Za-z0-9]+-)*[A-Za-z0-9]{16,}|sk_(?:live|test)_[A-Za-z0-9]{10,}"
    r"|(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{16,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}|(?:AKIA|ASIA)[A-Z0-9]{16}|AIza[0-9A-Za-z_-]{30,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)"
)
"""Tokens whose prefix is distinctive enough to find inside a longer argument (JSON, a DSN, …)."""
_NOT_A_SECRET_FLAG = re.compile(r"(?:file|path|dir|directory|env|var|name|type|mode|url|uri|endpoint|method|id)$")
"""`--token-file`, `--api-key-env`, `--auth-type`: flags whose value names where a secret is, not the secret."""
_PORT = re.compile(r"(?:\d{1,5}|(?:[\d.]+:)?\d{1,5}:\d{1,5}(?:/(?:tcp|udp))?)")
_HEADER_FLAGS = ("--header", "--headers", "-H")


def looks_secret(key: str, value: str) -> bool:
    """A value to keep out of a descriptor: its key names a secret, or it looks like one."""
    if not value:
        return False
    return secret_key(key) or bool(_SECRET_WORDS.search(key)) or token_shaped(value)


def token_shaped(value: str) -> bool:
    """A known token format, a URL with a password, or a long random-looking string."""
    if _TOKEN_PREFIX.search(value):
        return True
    with contextlib.suppress(ValueError):
        if "://" in value and urlsplit(value).password:
            return True
    if len(value) < 20 or not re.fullmatch(r"[A-Za-z0-9_\-+/=.~]+", value) or value[0] in "/.~":
        return False
    if not (re.search(r"[0-9]", value) and re.search(r"[A-Za-z]", value)):
        return False
    counts = Counter(value)
    entropy = -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())
    # A path such as `dist/server-2024/index.js` has slashes too; base64 of a key is far more random.
    return entropy >= (4.5 if "/" in value else 3.5)


@dataclass(frozen=True)
class Hidden:
    """A secret argument or URL: a name for it (a flag or header, for a variable's name) and how to show it."""

    name: str
    masked: str


def secret_url(url: str) -> Hidden | None:
    """`url` when it holds a credential: a user or password, a key in the query, a token in the path."""
    try:
        parts = urlsplit(url)
        password, username = parts.password, parts.username
    except ValueError:
        return None
    found = bool(password) or bool(username and token_shaped(username))
    query = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        hidden = looks_secret(key, value)
        found |= hidden
        query.append(f"{key}={MASK if hidden else value}")
    segments = []
    for segment in parts.path.split("/"):
        hidden = bool(segment) and (token_shaped(segment) or bool(_TOKEN_INSIDE.search(segment)))
        found |= hidden
        segments.append(MASK if hidden else segment)
    if not found:
        return None
    host = parts.hostname or ""
    netloc = (f"{MASK}@" if username or password else "") + (f"[{host}]" if ":" in host else host)
    with contextlib.suppress(ValueError):
        netloc += f":{parts.port}" if parts.port else ""
    return Hidden("url", urlunsplit((parts.scheme, netloc, "/".join(segments), "&".join(query), "")))


def secret_arg(args: Sequence[str], index: int) -> Hidden | None:
    """`args[index]` when it is (or holds) a secret, in any of the forms the module docstring lists."""
    arg, flag = args[index], args[index - 1] if index else ""
    if flag in _HEADER_FLAGS or arg.startswith(tuple(f"{f}=" for f in _HEADER_FLAGS)):
        prefix, _, line = arg.partition("=") if arg.startswith("-") else ("", "", arg)
        name, colon, value = line.partition(":")
        if colon and looks_secret(name.strip(), value.strip()):
            return Hidden(name.strip(), f"{prefix}{'=' if prefix else ''}{name}: {MASK}")
    name, equals, value = arg.partition("=")
    bare = name.lstrip("-")
    named = equals and value and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", bare)
    if named and (_secret_flag(name if name.startswith("-") else f"--{bare}", value) or token_shaped(value)):
        return Hidden(bare, f"{name}={MASK}")
    if flag.startswith("-") and "=" not in flag and not arg.startswith("-") and _secret_flag(flag, arg):
        return Hidden(flag.lstrip("-"), MASK)
    if "://" in arg:
        found = secret_url(arg)
        if found is not None:
            return found
    if token_shaped(arg):
        return Hidden("", MASK)
    if _TOKEN_INSIDE.search(arg):
        return Hidden("", _TOKEN_INSIDE.sub(MASK, arg))
    return None


def _secret_flag(flag: str, value: str) -> bool:
    """The value of `flag` is a secret: `--api-key`, `--password`, `--pass`, or `-p` with no port after it."""
    if flag in ("-p", "--pass"):
        return not _PORT.fullmatch(value)
    words = flag.lstrip("-").lower()
    return bool(_SECRET_WORDS.search(words)) and not _NOT_A_SECRET_FLAG.search(words)
