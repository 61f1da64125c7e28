"""Store indexes: the format's checks and merge rules, then stores served by a loopback HTTP server.

The server is started here and serves folders written by `library --publish`: a good store (the bundled
library, a newer version of one entry and one more entry), a tampered one (a descriptor changed after
its index was written) and one whose descriptor is over maxDescriptorBytes. Every fetch goes through
the installed command, under the web rules (allowHttpLoopback for the loopback server).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import replace
from functools import partial
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from aai_gateway.library.entries import BUNDLED, Catalog, bundled
from aai_gateway.library.store import merge, parse_index, publish, version_key
from tests import support
from tests.support import TEST_APPS, gateway_command

ECHO = "dev.aai.echo"
DBUS = "org.freedesktop.dbus"
SMALL_CAP = 30_000


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def add_entry(store: Path, app_id: str, data: bytes, version: str = "1.0.0") -> None:
    """Put a descriptor into a published store and list it in its index."""
    target = store / "apps" / app_id / "aai.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    index = json.loads((store / "index.json").read_text("utf-8"))
    index["entries"] = [e for e in index["entries"] if e["id"] != app_id]
    index["entries"].append(
        {
            "id": app_id,
            "names": {"en": f"{app_id} from the store", "fr": "Écho du magasin"},
            "description": "A descriptor served by the test's store.",
            "version": version,
            "descriptorUrl": f"apps/{app_id}/aai.json",
            "sha256": sha(data),
            "tools": ["echo"],
        }
    )
    (store / "index.json").write_text(json.dumps(index))


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a loopback HTTP server holding good/, tampered/ and big/ stores."""
    root = tmp_path_factory.mktemp("stores")
    echo = (TEST_APPS / ECHO / "aai.json").read_bytes()
    for name in ("good", "tampered", "big"):
        # big/ lists only the oversized descriptor, so its index stays under the cap however the library grows
        (root / name).mkdir()
        publish([] if name == "big" else bundled().entries, root / name, f"{name} store")
        add_entry(root / name, ECHO, echo)
    newer = json.loads((root / "good" / "apps" / DBUS / "aai.json").read_text("utf-8"))
    newer["version"] = "1.1.0"
    add_entry(root / "good", DBUS, json.dumps(newer).encode(), version="1.1.0")
    (root / "tampered" / "apps" / ECHO / "aai.json").write_bytes(echo.replace(b"echoes", b"leaks"))
    padded = json.loads(echo)
    padded["description"] += " " + "x" * SMALL_CAP
    add_entry(root / "big", ECHO, json.dumps(padded).encode())
    with served(root) as base:
        yield base


def served(root: Path) -> AbstractContextManager[str]:
    """A loopback HTTP server for the files under `root`, while the block runs; its base URL."""
    return support.served(partial(Quiet, directory=str(root)))  # type: ignore[arg-type]  # a bound handler class


def home_with(tmp_path: Path, stores: list[str], **config: Any) -> dict[str, str]:
    home = tmp_path / "home"
    (home / ".aai").mkdir(parents=True, exist_ok=True)
    settings = {"storeUrls": stores, "web": {"allowHttpLoopback": True}} | config
    (home / ".aai" / "config.json").write_text(json.dumps(settings))
    return {"HOME": str(home), "AAI_PLATFORM": "linux", "PATH": "/usr/bin:/bin"}


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([gateway_command(), *args], env=env, capture_output=True, text=True, timeout=60, check=False)


# The format and the merge rules, in this process.


def test_an_index_keeps_its_good_entries_and_reports_the_bad_and_the_repeated() -> None:
    good = {"id": "org.example.a", "names": {"en": "A"}, "description": "d", "version": "1.0",
            "descriptorUrl": "a/aai.json", "sha256": "0" * 64}  # fmt: skip
    bad = good | {"id": "org.example.b", "sha256": "nothex"}
    index = {"store": {"name": "S", "formatVersion": 1}, "entries": [good, bad, good]}
    catalog = parse_index(json.dumps(index).encode(), "https://store.example/x/index.json")
    [entry] = catalog.entries
    assert entry.descriptor_url == "https://store.example/x/a/aai.json"
    assert entry.store_name == "S"
    text = "\n".join(map(str, catalog.problems))
    assert "index.json#/entries/1/sha256: " in text
    assert "#/entries/2/id: lists org.example.a again; the first is kept" in text


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"[1, 2]", "must be an object"),
        (b'{"store": {"name": "S", "formatVersion": 2}, "entries": []}', "formatVersion"),
        (b"<html>", "is not a JSON store index"),
    ],
)
def test_a_document_that_is_no_index_is_refused_whole(body: bytes, says: str) -> None:
    catalog = parse_index(body, "https://store.example/index.json")
    assert not catalog.entries
    assert says in str(catalog.problems[0])


def test_a_store_entry_replaces_a_bundled_one_only_when_newer() -> None:
    [ours] = [e for e in bundled().entries if e.app_id == DBUS]
    same = parse_index(
        json.dumps(
            {
                "store": {"name": "S", "formatVersion": 1},
                "entries": [
                    {
                        "id": DBUS,
                        "names": {"en": "Same"},
                        "description": "d",
                        "version": ours.version,
                        "descriptorUrl": "a.json",
                        "sha256": "0" * 64,
                    },
                    {
                        "id": "org.example.new",
                        "names": {"en": "New"},
                        "description": "d",
                        "version": "0.1",
                        "descriptorUrl": "b.json",
                        "sha256": "1" * 64,
                    },
                ],
            }
        ).encode(),
        "https://s.example/index.json",
    )
    merged = merge(Catalog((ours,)), same)
    assert [(e.app_id, e.source) for e in merged.entries] == [
        (DBUS, BUNDLED),
        ("org.example.new", "https://s.example/index.json"),
    ]
    newer = Catalog((replace(same.entries[0], version="1.10"),))
    assert merge(Catalog((ours,)), newer).entries[0].source == "https://s.example/index.json"
    assert version_key("1.10") > version_key("1.9") > version_key("1") > version_key("beta")


def test_publish_writes_an_index_that_lists_every_entry_with_its_hash(tmp_path: Path) -> None:
    index = publish(bundled().entries, tmp_path, "ours")
    catalog = parse_index(index.read_bytes(), index.as_uri())
    assert not catalog.problems
    assert {e.app_id for e in catalog.entries} == {e.app_id for e in bundled().entries}
    for entry in catalog.entries:
        assert entry.descriptor_url is not None
        assert sha(Path(entry.descriptor_url.removeprefix("file://")).read_bytes()) == entry.sha256
        assert entry.verified is not None
        assert entry.presence is not None


# Through the installed command, against the loopback server.


def test_library_merges_a_store_and_reports_a_refused_one(stores: str, tmp_path: Path) -> None:
    env = home_with(tmp_path, [f"{stores}/good/index.json", "https://10.1.2.3/index.json"])
    listed = cli(env, "library", "--json")
    assert listed.returncode == 0, listed.stderr
    by_id = {e["id"]: e for e in json.loads(listed.stdout)}
    assert by_id[ECHO]["source"] == f"{stores}/good/index.json"
    assert by_id[ECHO]["sourceName"] == "store good store"
    assert (by_id[DBUS]["version"], by_id[DBUS]["source"]) == ("1.1.0", f"{stores}/good/index.json")
    assert "https://10.1.2.3/index.json: the store index cannot be fetched: https://10.1.2.3 is refused: " in (
        listed.stderr
    )
    assert "is a private address, refused unless web.allowPrivateNetworks is set" in listed.stderr

    found = cli(env, "library", "ECHO", "magasin")
    assert found.stdout.startswith(f"{ECHO}  {ECHO} from the store (Écho du magasin)")
    assert "source: store good store" in found.stdout


def test_install_from_a_store_checks_the_hash_and_writes_the_descriptor(stores: str, tmp_path: Path) -> None:
    env = home_with(tmp_path, [f"{stores}/good/index.json"])
    done = cli(env, "install", ECHO)
    assert done.returncode == 0, done.stderr
    assert f"from {stores}/good/apps/{ECHO}/aai.json" in done.stdout
    written = tmp_path / "home" / ".aai" / ECHO / "aai.json"
    assert written.read_bytes() == (TEST_APPS / ECHO / "aai.json").read_bytes()
    assert cli(env, "install", DBUS).returncode == 0  # the store's newer version, fetched
    assert json.loads((tmp_path / "home" / ".aai" / DBUS / "aai.json").read_text())["version"] == "1.1.0"


def test_a_tampered_descriptor_is_refused_and_nothing_written(stores: str, tmp_path: Path) -> None:
    env = home_with(tmp_path, [f"{stores}/tampered/index.json"])
    refused = cli(env, "install", ECHO)
    assert refused.returncode == 1
    assert f"{stores}/tampered/apps/{ECHO}/aai.json has SHA-256 " in refused.stderr
    assert "the descriptor is refused" in refused.stderr
    assert not (tmp_path / "home" / ".aai" / ECHO).exists()


def test_an_oversized_descriptor_is_refused(stores: str, tmp_path: Path) -> None:
    env = home_with(tmp_path, [f"{stores}/big/index.json"], maxDescriptorBytes=SMALL_CAP)
    refused = cli(env, "install", ECHO)
    assert refused.returncode == 1
    assert f"{stores}/big/apps/{ECHO}/aai.json is larger than the 29.3 KiB limit (maxDescriptorBytes)" in (
        refused.stderr
    )
    assert not (tmp_path / "home" / ".aai" / ECHO).exists()


def test_loopback_stores_and_urls_need_allow_http_loopback(stores: str, tmp_path: Path) -> None:
    url = f"{stores}/good/apps/{ECHO}/aai.json"
    env = home_with(tmp_path, [f"{stores}/good/index.json"], web={})
    listed = cli(env, "library")
    assert "plain http, which is refused" in listed.stderr
    assert f"{ECHO}  " not in listed.stdout
    assert cli(env, "install", url).returncode == 1

    allowed = home_with(tmp_path, [])
    done = cli(allowed, "install", url)
    assert done.returncode == 0, done.stderr
    assert f"Installed Echo ({ECHO} 1.0.0) from {url}" in done.stdout
