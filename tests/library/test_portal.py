"""The desktop portal entry against xdg-desktop-portal with its GTK backend and dunst, on a private bus and display.

Settings are compared with what gsettings says in the same environment; an opened URL must reach the default
handler the test installs; notifications are checked with dunst's own `dunstctl`.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.e2e.mcp_client import stdio_session
from tests.e2e.test_dunst import free_display
from tests.library.apps import desktop_env, started
from tests.library.library_gateway import Exec, gateway_env, read_only_tools
from tests.support import Bus, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

APP = "org.freedesktop.portal.desktop"
HANDLER = """[Desktop Entry]
Type=Application
Name=URL recorder
Exec=sh -c 'echo "$1" >> {record}' recorder %u
MimeType=x-scheme-handler/https;
NoDisplay=true
"""


@pytest.fixture(scope="module")
def portal_env(library_bus: Bus, workdir: Path) -> Iterator[dict[str, str]]:
    """The portal, its GTK backend and dunst running; their environment (gsettings in memory, a https handler)."""
    with free_display(workdir) as display, ExitStack() as running:
        home = workdir / "home"
        env = desktop_env(library_bus, home, display, XDG_CURRENT_DESKTOP="GNOME", GSETTINGS_BACKEND="memory")
        applications = home / ".local" / "share" / "applications"
        applications.mkdir(parents=True)
        (applications / "url-recorder.desktop").write_text(HANDLER.format(record=workdir / "opened.txt"))
        (home / ".config").mkdir(exist_ok=True)
        (home / ".config" / "mimeapps.list").write_text(
            "[Default Applications]\nx-scheme-handler/https=url-recorder.desktop\n"
        )
        (workdir / "dunstrc").write_text("[global]\n    monitor = 0\n    history_length = 50\n")
        notifications = ["org.freedesktop.Notifications"]
        running.enter_context(
            started(
                ["dunst", "-config", str(workdir / "dunstrc")], env, workdir / "dunst.log", library_bus, notifications
            )
        )
        gtk = ["org.freedesktop.impl.portal.desktop.gtk"]
        running.enter_context(
            started(["/usr/libexec/xdg-desktop-portal-gtk"], env, workdir / "gtk.log", library_bus, gtk)
        )
        desktop = ["org.freedesktop.portal.Desktop"]
        running.enter_context(
            started(["/usr/libexec/xdg-desktop-portal"], env, workdir / "portal.log", library_bus, desktop)
        )
        yield env


def run_tool(env: dict[str, str], *argv: str) -> str:
    return subprocess.run(list(argv), env=env, capture_output=True, text=True, check=True, timeout=10).stdout.strip()


async def test_portal_settings_uri_and_notifications(
    library_bus: Bus, portal_env: dict[str, str], workdir: Path
) -> None:
    env = gateway_env(library_bus, workdir / "gateway-home", APP)
    async with stdio_session(env, workdir / "stderr.log") as session:
        run = Exec(session, APP)
        gsettings = run_tool(portal_env, "gsettings", "get", "org.gnome.desktop.interface", "color-scheme")
        assert gsettings == "'default'"
        assert await run("color_scheme") == 0  # "default": no preference
        font = run_tool(portal_env, "gsettings", "get", "org.gnome.desktop.interface", "font-name").strip("'")
        assert await run("read_setting", namespace="org.gnome.desktop.interface", key="font-name") == font
        everything = await run("read_settings", namespaces=["org.gnome.desktop.interface"])
        assert everything["org.gnome.desktop.interface"]["font-name"] == font
        assert everything["org.gnome.desktop.interface"]["color-scheme"] == "default"
        kind, detail = await run.error("read_setting", namespace="org.example.nothing", key="nothing")
        assert kind == "AUTOMATION_FAILED"
        assert "org.freedesktop.portal.Error.NotFound" in detail
        status = await run("network_status")
        assert set(status) >= {"available", "metered", "connectivity"}
        assert await run("proxy_for", uri="https://example.com") == ["direct://"]
        answers = {tool: await run(tool, **args) for tool, args in READ_ONLY_ARGS.items()}
        assert set(answers) == set(read_only_tools(APP))

        handle = await run("open_uri", uri="https://example.com/report?id=7")
        assert handle.startswith("/org/freedesktop/portal/desktop/request/")
        record = workdir / "opened.txt"
        wait_until(record.exists, 10, "the default https handler to run")
        assert record.read_text().splitlines() == ["https://example.com/report?id=7"]

        displayed = int(run_tool(portal_env, "dunstctl", "count", "displayed"))
        await run("notify", id="build-42", title="Build finished", body="All 12 tests passed", priority="high")
        wait_until(
            lambda: int(run_tool(portal_env, "dunstctl", "count", "displayed")) == displayed + 1, 10, "dunst to show it"
        )
        await run("remove_notification", id="build-42")
        wait_until(
            lambda: int(run_tool(portal_env, "dunstctl", "count", "displayed")) == displayed, 10, "dunst to close it"
        )
        history = json.loads(run_tool(portal_env, "dunstctl", "history"))["data"][0]
        shown = [(n["summary"]["data"], n["body"]["data"]) for n in history]
        assert ("Build finished", "All 12 tests passed") in shown


READ_ONLY_ARGS: dict[str, dict[str, object]] = {
    "color_scheme": {},
    "read_setting": {"namespace": "org.freedesktop.appearance", "key": "color-scheme"},
    "read_settings": {"namespaces": []},
    "network_status": {},
    "proxy_for": {"uri": "https://example.com"},
}


async def test_dunst_do_not_disturb_and_history(library_bus: Bus, portal_env: dict[str, str], workdir: Path) -> None:
    app = "org.dunstproject.dunst"

    def count(which: str) -> int:
        return int(run_tool(portal_env, "dunstctl", "count", which))

    env = gateway_env(library_bus, workdir / "dunst-gateway-home", app)
    async with stdio_session(env, workdir / "dunst-stderr.log") as session:
        run = Exec(session, app)
        await run("close_all")
        wait_until(lambda: count("displayed") == 0, 10, "dunst to close everything")
        await run("set_do_not_disturb", on=True)
        assert run_tool(portal_env, "dunstctl", "is-paused") == "true"
        for summary in ("Disk almost full", "Meeting in 5 minutes"):
            run_tool(portal_env, "dunstify", "--appname=tests", summary)
        wait_until(lambda: count("waiting") == 2, 10, "dunst to hold both back")
        assert count("displayed") == 0
        assert await run("do_not_disturb") is True
        assert await run("waiting_count") == 2
        await run("set_do_not_disturb", on=False)
        wait_until(lambda: count("displayed") == 2, 10, "dunst to show both")
        await run("close_latest")
        wait_until(lambda: count("displayed") == 1, 10, "dunst to close one")
        await run("close_all")
        wait_until(lambda: count("displayed") == 0, 10, "dunst to close the other")
        history = await run("history")
        assert {n["summary"] for n in history[:2]} == {"Disk almost full", "Meeting in 5 minutes"}
        await run("show_last_from_history")
        wait_until(lambda: count("displayed") == 1, 10, "dunst to show the last one again")
        older = history[1]["id"]
        await run("show_from_history", id=older)
        wait_until(lambda: count("displayed") == 2, 10, "dunst to show the older one again")

        answers = {tool: await run(tool) for tool in read_only_tools(app)}
        assert answers["do_not_disturb"] is False
        assert (answers["displayed_count"], answers["waiting_count"]) == (2, 0)
        assert answers["history_count"] == count("history") == len(answers["history"])
        await run("close_all")


async def test_dunst_do_not_disturb_is_put_back_by_its_undo(
    library_bus: Bus, portal_env: dict[str, str], workdir: Path
) -> None:
    """The entry's undo of set_do_not_disturb, run as a plan runs it, puts back what dunst had, whichever way it
    went and also when the step changed nothing."""
    app = "org.dunstproject.dunst"

    def paused() -> bool:
        return {"true": True, "false": False}[run_tool(portal_env, "dunstctl", "is-paused")]

    env = gateway_env(library_bus, workdir / "dunst-undo-home", app)
    async with stdio_session(env, workdir / "dunst-undo-stderr.log") as session:
        run = Exec(session, app)
        for had, wanted in ((False, True), (True, False), (True, True)):
            run_tool(portal_env, "dunstctl", "set-paused", str(had).lower())
            assert paused() is had
            step = await run.step("set_do_not_disturb", on=wanted)
            assert step.before is had
            assert paused() is wanted
            await run.undo(step)
            assert paused() is had
        run_tool(portal_env, "dunstctl", "set-paused", "false")
