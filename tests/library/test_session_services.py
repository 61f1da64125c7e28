"""Library entries for desktop services on the session bus, run for real: Xfce's settings store (xfconfd) and
the Secret Service of gnome-keyring, both from Debian, on one private session bus.

The installed gateway is driven with the MCP SDK client through `aai_exec`; every change is checked with
the service's own command-line client (xfconf-query, secret-tool) on the same bus.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.mcp_client import stdio_session
from tests.e2e.oauth_env import GnomeKeyring
from tests.library.library_gateway import Exec, driving, library_home
from tests.support import Bus, stop, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

XFCONF = "org.xfce.xfconf"
SECRETS = "org.freedesktop.secrets"


@pytest.fixture(scope="module")
def xfconfd(library_bus: Bus, workdir: Path) -> Iterator[dict[str, str]]:
    """xfconfd with settings of its own (XDG_CONFIG_HOME); yields the environment its clients use."""
    [program] = Path("/usr/lib").glob("*/xfce4/xfconf/xfconfd")
    env = library_bus.env(XDG_CONFIG_HOME=str(workdir / "config"))
    proc = subprocess.Popen([str(program)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:

        def serving() -> bool:
            assert proc.poll() is None, f"xfconfd exited with {proc.returncode}"
            return library_bus.has_owner("org.xfce.Xfconf")

        wait_until(serving, 20, "xfconfd on the private bus")
        yield env
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def keyring(library_bus: Bus, workdir: Path) -> Iterator[GnomeKeyring]:
    started = GnomeKeyring(library_bus, workdir / "keyring")
    try:
        yield started
    finally:
        started.stop()


def bus_env(library_bus: Bus, home: Path) -> dict[str, str]:
    return library_bus.env(HOME=str(home), AAI_PLATFORM="linux")


def xfconf_query(env: dict[str, str], channel: str, prop: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["xfconf-query", "-c", channel, "-p", prop], env=env, capture_output=True, text=True, check=False
    )


async def test_xfconf(library_bus: Bus, xfconfd: dict[str, str], tmp_path: Path) -> None:
    async with driving(XFCONF, tmp_path, lambda home: bus_env(library_bus, home)) as run:
        listed = subprocess.run(["xfconf-query", "-l"], env=xfconfd, capture_output=True, text=True, check=True)
        assert sorted(await run("list_channels")) == sorted(listed.stdout.split()[1:])  # after "Channels:"

        assert await run("set_property", channel="xfwm4", property="/general/workspace_count", value=3) is None
        assert xfconf_query(xfconfd, "xfwm4", "/general/workspace_count").stdout.strip() == "3"
        assert await run("set_property", channel="xfwm4", property="/general/theme", value="Greybird") is None
        assert xfconf_query(xfconfd, "xfwm4", "/general/theme").stdout.strip() == "Greybird"
        assert await run("set_property", channel="xfwm4", property="/general/box_move", value=True) is None
        assert xfconf_query(xfconfd, "xfwm4", "/general/box_move").stdout.strip() == "true"

        assert await run("get_property", channel="xfwm4", property="/general/workspace_count") == 3
        assert await run("get_all_properties", channel="xfwm4") == {
            "/general/workspace_count": 3,
            "/general/theme": "Greybird",
            "/general/box_move": True,
        }
        assert await run("property_exists", channel="xfwm4", property="/general/theme") is True
        assert await run("is_property_locked", channel="xfwm4", property="/general/theme") is False

        assert await run("reset_property", channel="xfwm4", property="/general/theme") is None
        gone = xfconf_query(xfconfd, "xfwm4", "/general/theme")
        assert gone.returncode != 0
        assert "does not exist" in gone.stderr
        assert await run("property_exists", channel="xfwm4", property="/general/theme") is False
        kind, detail = await run.error("get_property", channel="xfwm4", property="/general/theme")
        assert kind == "AUTOMATION_FAILED"
        assert "/general/theme" in detail


async def test_xfconf_setting_is_put_back_by_its_undo(
    library_bus: Bus, xfconfd: dict[str, str], tmp_path: Path
) -> None:
    """set_property's undo, run as a plan runs it, puts the old value back; for a setting that does not exist yet
    the before read fails (so a plan does not run the step: there would be nothing to put back)."""
    subprocess.run(
        ["xfconf-query", "-c", "xfce4-panel", "-p", "/panels/dark-mode", "-n", "-t", "bool", "-s", "false"],
        env=xfconfd,
        check=True,
        timeout=10,
    )
    home = library_home(tmp_path / "home", XFCONF)
    async with stdio_session(bus_env(library_bus, home), tmp_path / "stderr.log") as session:
        run = Exec(session, XFCONF)
        step = await run.step("set_property", channel="xfce4-panel", property="/panels/dark-mode", value=True)
        assert step.before is False
        assert xfconf_query(xfconfd, "xfce4-panel", "/panels/dark-mode").stdout.strip() == "true"
        await run.undo(step)
        assert xfconf_query(xfconfd, "xfce4-panel", "/panels/dark-mode").stdout.strip() == "false"

        read = step.undo.before
        assert read is not None
        new = {"channel": "xfce4-panel", "property": "/panels/never-set", "value": 1}
        kind, detail = await run.error(read.tool, **read.arguments(new))
        assert kind == "AUTOMATION_FAILED"
        assert "/panels/never-set" in detail
        assert xfconf_query(xfconfd, "xfce4-panel", "/panels/never-set").returncode != 0


def secret_tool(bus: Bus, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["secret-tool", *args], env=bus.env(), capture_output=True, text=True, check=False)


async def test_secret_service(library_bus: Bus, keyring: GnomeKeyring, tmp_path: Path) -> None:
    attributes = {"service": "library-test.example", "username": "anna"}
    async with driving(SECRETS, tmp_path, lambda home: bus_env(library_bus, home)) as run:
        collections = await run("list_collections")
        assert "/org/freedesktop/secrets/collection/login" in collections
        output, secret_session = await run("open_session")
        assert output == ""
        assert secret_session.startswith("/org/freedesktop/secrets/session/")

        item, prompt = await run(
            "store_secret", label="Library test", attributes=attributes, secret="s3cret ü!", session=secret_session
        )
        assert prompt == "/"
        assert item.startswith("/org/freedesktop/secrets/collection/login/")
        assert secret_tool(library_bus, "lookup", *attributes_args(attributes)).stdout == "s3cret ü!"

        assert await run("search_items", attributes={"service": "library-test.example"}) == [[item], []]
        info = await run("item_info", item=item)
        assert (info["Label"], info["Attributes"]["username"], info["Locked"]) == ("Library test", "anna", False)
        _, _, value, content_type = await run("get_secret", item=item, session=secret_session)
        assert (bytes(value).decode(), content_type) == ("s3cret ü!", "text/plain")

        kind, detail = await run.error("item_info", item="/org/freedesktop/secrets/not an item")
        assert kind == "INVALID_PARAMS"
        assert "object path" in detail

        assert await run("delete_item", item=item) == "/"
        assert secret_tool(library_bus, "lookup", *attributes_args(attributes)).returncode != 0
        assert await run("search_items", attributes={"service": "library-test.example"}) == [[], []]


def attributes_args(attributes: dict[str, str]) -> list[str]:
    return [part for pair in attributes.items() for part in pair]
