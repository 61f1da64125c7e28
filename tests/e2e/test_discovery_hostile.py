"""Hostile descriptor folders: unreadable places, app-id hijacks and edits made while the gateway starts.

Tests run as root, whom permissions do not stop, so the unreadable cases run the gateway as `nobody`.
"""

from __future__ import annotations

import asyncio
import json
import os
import plistlib
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.raw_client import RawClient
from tests.support import EXAMPLES, TEST_APPS, gateway_command, install_descriptor

pytestmark = [pytest.mark.e2e]

NOTES = EXAMPLES / "dev.aai.notes" / "aai.json"
ECHO = TEST_APPS / "dev.aai.echo" / "aai.json"
AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


@pytest.fixture
def nobody_home() -> Iterator[Path]:
    """A home `nobody` owns, outside root's private temporary folder, with the echo app installed."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the gateway as an ordinary user")
    home = Path(tempfile.mkdtemp(prefix="aai-nobody-"))
    home.chmod(0o755)
    install_descriptor(home / ".aai", ECHO)
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _give_to_nobody(home: Path) -> None:
    """`chown -R nobody:nogroup`, keeping the modes the case set."""
    subprocess.run(["chown", "-R", "nobody:nogroup", str(home)], check=True)


UNREADABLE: dict[str, Callable[[Path], object]] = {
    "app folder 000": lambda aai: _unreadable(aai / "org.private.app", folder=True),
    "aai.json 000": lambda aai: _unreadable(aai / "org.private.app", folder=False),
    "scan path /": lambda aai: (aai / "config.json").write_text(json.dumps({"scanPaths": ["~/.aai", "/"]})),
}
EXPECTED_PROBLEM = {
    "app folder 000": "org.private.app: folder cannot be read: Permission denied",
    "aai.json 000": "org.private.app/aai.json: ",
    "scan path /": "",
}


def _unreadable(place: Path, *, folder: bool) -> None:
    place.mkdir()
    if folder:
        place.chmod(0)
    else:
        shutil.copyfile(NOTES, place / "aai.json")
        (place / "aai.json").chmod(0)


def _unreadable_case(name: str, home: Path) -> None:
    aai = home / ".aai"
    _give_to_nobody(home)
    UNREADABLE[name](aai)
    _give_to_nobody(home)


async def _spawn(command: list[str], env: dict[str, str]) -> RawClient:
    proc = await asyncio.create_subprocess_exec(
        *command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    return RawClient(proc)


async def _tools(client: RawClient) -> list[str]:
    result = await asyncio.wait_for(client.request("tools/list", {}), 10)
    return [str(t["name"]) for t in result["tools"]]


def bundle(home: Path, name: str, bundle_id: str | None, app_id: str) -> Path:
    """`~/Applications/<name>.app` holding a descriptor declaring `app_id`, whose Info.plist names `bundle_id`."""
    contents = home / "Applications" / f"{name}.app" / "Contents"
    (contents / "Resources").mkdir(parents=True)
    if bundle_id is not None:
        with (contents / "Info.plist").open("wb") as info:
            plistlib.dump({"CFBundleIdentifier": bundle_id, "CFBundleName": name}, info)
    doc = json.loads((SEEDS / "seed001-desktop-reminders-completed.json").read_text())
    doc["app"]["id"] = app_id
    doc["app"]["description"] = f"from {name}.app"
    descriptor = contents / "Resources" / "aai.json"
    descriptor.write_text(json.dumps(doc))
    return descriptor


@pytest.mark.hostile("discovery")
def test_a_macos_bundle_serves_only_its_own_bundle_id(tmp_path: Path) -> None:
    """A bundle's CFBundleIdentifier names its app, as a folder does: whatever the order bundles are
    found in, one declaring another app's id is named and not served."""
    rightful = bundle(tmp_path, "Reminders", "com.apple.reminders", "com.apple.reminders")
    impostor = bundle(tmp_path, "AAA Helper", "com.example.helper", "com.apple.reminders")
    unlabelled = bundle(tmp_path, "Plain", None, "com.example.plain")
    env = {"HOME": str(tmp_path), "AAI_PLATFORM": "macos"}
    done = subprocess.run([gateway_command(), "apps", "--json"], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    served = {a["appId"]: a["description"] for a in json.loads(done.stdout)}
    assert served == {"com.apple.reminders": "from Reminders.app", "com.example.plain": "from Plain.app"}, served
    scanned = subprocess.run([gateway_command(), "--scan"], capture_output=True, text=True, env=env, check=False)
    problems = scanned.stdout.split("Problems (")[1]
    expected = f"{impostor}#/app/id: declares app id 'com.apple.reminders' but its app's CFBundleIdentifier is"
    assert expected in problems, scanned.stdout
    assert str(rightful) not in problems, scanned.stdout
    assert str(unlabelled) not in problems, scanned.stdout


@pytest.mark.anyio
@pytest.mark.hostile("discovery")
@pytest.mark.parametrize("case", list(UNREADABLE))
async def test_unreadable_places_never_stop_the_gateway(case: str, nobody_home: Path) -> None:
    _unreadable_case(case, nobody_home)
    env = {"HOME": str(nobody_home), "AAI_PLATFORM": "linux", "PATH": os.environ["PATH"]}
    client = await _spawn([*AS_NOBODY, gateway_command(), "--mcp"], env)
    try:
        await asyncio.wait_for(client.initialize("hostile"), 20)
        await asyncio.sleep(3)  # the watcher is up, or has failed, by now
        assert client.proc.returncode is None
        assert "app_dev_aai_echo" in await _tools(client)
    finally:
        await client.aclose()
    assert client.proc.stderr is not None
    stderr = (await client.proc.stderr.read()).decode()
    assert "Traceback" not in stderr, stderr
    assert "ExceptionGroup" not in stderr, stderr

    done = subprocess.run(
        [*AS_NOBODY, gateway_command(), "--scan"], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    problems = done.stdout[done.stdout.index("Problems (") :]
    assert "Problems (0)" not in problems or case == "scan path /", done.stdout
    assert EXPECTED_PROBLEM[case] in problems, done.stdout
    if case != "scan path /":
        checked = subprocess.run(
            [*AS_NOBODY, gateway_command(), "validate", str(nobody_home / ".aai")],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        assert checked.returncode == 1, checked.stdout
        assert "org.private.app/aai.json: " in checked.stdout, checked.stdout


SEEDS = Path(__file__).parents[1] / "golden" / "seeds"
HIJACKS = ["aa.copy", "zz.copy", "dev.aai.notez", "DEV.AAI.NOTES", "aa.app", "zz.app"]


@pytest.mark.hostile("discovery")
@pytest.mark.parametrize("folder", HIJACKS)
def test_a_copy_in_another_folder_cannot_take_over_an_app(folder: str, tmp_path: Path) -> None:
    aai = tmp_path / ".aai"
    install_descriptor(aai, NOTES)
    rightful = aai / "dev.aai.notes" / "aai.json"
    copy = aai / folder / "aai.json"
    copy.parent.mkdir(parents=True)
    doc = json.loads(NOTES.read_text())
    doc["description"] = "Hijacked"
    copy.write_text(json.dumps(doc))
    env = {"HOME": str(tmp_path), "AAI_PLATFORM": "linux"}
    done = subprocess.run([gateway_command(), "apps", "--json"], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    [notes] = [a for a in json.loads(done.stdout) if a["appId"] == "dev.aai.notes"]
    assert notes["description"] != "Hijacked"
    scanned = subprocess.run([gateway_command(), "--scan"], capture_output=True, text=True, env=env, check=False)
    problems = scanned.stdout.split("Problems (")[1]
    assert f"  {rightful}" not in problems, scanned.stdout
    assert f"  {copy}#/appId: " in problems, scanned.stdout


@pytest.mark.hostile("discovery")
@pytest.mark.parametrize("shape", ["A", "B", "C"])
def test_an_id_differing_from_its_folder_is_named_and_not_served(shape: str, tmp_path: Path) -> None:
    aai = tmp_path / ".aai"
    install_descriptor(aai, NOTES)
    copy = aai / "aa.copy" / "aai.json"
    copy.parent.mkdir()
    seed = {
        "A": NOTES,
        "B": SEEDS / "seed001-desktop-reminders-completed.json",
        "C": SEEDS / "seed001-web-example-completed.json",
    }[shape]
    doc = json.loads(seed.read_text())
    if shape == "A":
        pointer = "#/appId"
    else:
        doc["app"]["id"] = "dev.aai.notes"
        pointer = "#/app/id"
    copy.write_text(json.dumps(doc))
    claimed = "dev.aai.notes"
    env = {"HOME": str(tmp_path), "AAI_PLATFORM": "linux"}
    done = subprocess.run([gateway_command(), "--scan"], capture_output=True, text=True, env=env, check=False)
    expected = f"{copy}{pointer}: declares app id '{claimed}' but its folder is 'aa.copy'"
    assert expected in done.stdout, done.stdout
    assert "already used" not in done.stdout, done.stdout


@pytest.mark.anyio
@pytest.mark.hostile("discovery")
@pytest.mark.parametrize("edit", ["add", "change"])
async def test_edits_made_while_the_gateway_starts_are_picked_up(edit: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    aai = home / ".aai"
    install_descriptor(aai, ECHO)
    env = {"HOME": str(home), "AAI_PLATFORM": "linux", "PATH": os.environ["PATH"]}
    client = await _spawn([gateway_command(), "--mcp"], env)
    try:
        await asyncio.wait_for(client.initialize("early", list_tools=False), 20)
        echo = aai / "dev.aai.echo" / "aai.json"
        if edit == "add":
            install_descriptor(aai, NOTES)
        else:
            doc = json.loads(echo.read_text())
            doc["description"] = "Changed while starting"
            echo.write_text(json.dumps(doc))
        first = await _listing(client)
        listing, deadline = first, time.monotonic() + 5
        while not _shows(edit, listing) and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            listing = await _listing(client)
        assert _shows(edit, listing), listing
        if not _shows(edit, first):
            methods = [m.get("method") for m in client.unmatched]
            assert "notifications/tools/list_changed" in methods, methods
    finally:
        await client.aclose()


async def _listing(client: RawClient) -> dict[str, str]:
    result = await asyncio.wait_for(client.request("tools/list", {}), 10)
    return {str(t["name"]): str(t.get("description", "")) for t in result["tools"]}


def _shows(edit: str, listing: dict[str, str]) -> bool:
    if edit == "add":
        return "app_dev_aai_notes" in listing
    # the app may be missing for a moment: a scan can read the file half rewritten (write_text truncates first)
    return "Changed while starting" in listing.get("app_dev_aai_echo", "")
