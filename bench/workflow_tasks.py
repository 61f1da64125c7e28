"""The tasks of `bench.workflow`'s part 1, each done two ways: as an agent does it today (the app's guide, then
one `aai_exec` per operation, each answer read before the next request) and as one `aai_run` plan; with what
each puts back before it runs and checks on the apps after."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcp import ClientSession
from mcp.shared.exceptions import MCPError

from bench.desktop import DUNST, MPRIS, NOTIFICATIONS, PROFILES, TRANSMISSION, UPOWER, Desktop

CALL_TIMEOUT = 30.0
"""Seconds one request may take before the task is given up (the gateway's own bounds are shorter)."""


class Agent:
    """The SDK client session, counting the requests sent and the bytes of every answer read."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session
        self.requests = 0
        self.read = 0
        self.guides = 0
        """Of `read`, the bytes of the apps' guides."""

    async def call(self, name: str, args: dict[str, Any]) -> tuple[bool, Any]:
        """(ok, what the agent reads): an `aai_exec` result's value, an `aai_run` report, or an error's data."""
        self.requests += 1
        try:
            async with asyncio.timeout(CALL_TIMEOUT):
                result = await self.session.call_tool(name, args)
        except MCPError as exc:
            self.read += len(exc.error.model_dump_json(by_alias=True, exclude_none=True))
            return False, exc.error.data
        self.read += len(result.model_dump_json(by_alias=True, exclude_none=True))
        if result.structured_content is not None and name == "aai_run":
            return not result.is_error, result.structured_content
        text = "".join(getattr(block, "text", "") for block in result.content)
        try:
            return not result.is_error, json.loads(text)
        except json.JSONDecodeError:  # a string result comes as it is
            return not result.is_error, text

    async def guide(self, app: str) -> None:
        read = self.read
        await self.call("app_" + app.replace(".", "_"), {})
        self.guides += self.read - read

    async def exec(self, app: str, tool: str, **args: Any) -> Any:
        ok, value = await self.call("aai_exec", {"app": app, "tool": tool, "args": args})
        if not ok:
            raise RuntimeError(f"{app}:{tool} failed: {value}")
        return value

    async def run(self, plan: dict[str, Any], *, ok: bool = True) -> dict[str, Any]:
        succeeded, report = await self.call("aai_run", plan)
        if succeeded != ok or not isinstance(report, dict):
            raise RuntimeError(f"aai_run ended {'well' if succeeded else 'badly'}: {report}")
        return report


Way = Callable[[Agent, str], Awaitable[None]]
"""One way of doing a task; the string is a tag making this run's notifications its own."""


@dataclass
class Task:
    name: str
    needs: Callable[[Desktop], str | None]
    """Why the task cannot run here, or None."""
    today: Way
    plan: Way
    reset: Callable[[Desktop], None]
    check: Callable[[Desktop, str], str | None]
    """What was not done (None when the task was done), after a way ran with the tag."""


def needing(*what: str) -> Callable[[Desktop], str | None]:
    def needs(found: Desktop) -> str | None:
        have = {"mpv": found.mpv is not None, "dunst": found.dunst, "system": found.system is not None}
        have["transmission"] = found.rpc is not None
        absent = [w for w in what if not have[w]]
        return f"needs {', '.join(absent)}, not running here" if absent else None

    return needs


def nothing(found: Desktop) -> None:
    pass


def balanced(found: Desktop) -> None:
    found.profile("set", "balanced")


def no_torrents(found: Desktop) -> None:
    found.remove_torrents()


def now_playing(found: Desktop) -> Task:
    """1. The current track read, and notified."""
    title = found.track.name if found.track else ""

    async def now_playing_today(agent: Agent, tag: str) -> None:
        await agent.guide(MPRIS)
        track = await agent.exec(MPRIS, "metadata", player="mpv")
        await agent.guide(NOTIFICATIONS)
        await agent.exec(
            NOTIFICATIONS, "notify", app_name="bench", summary=f"Now playing: {track['xesam:title']} {tag}"
        )

    async def now_playing_plan(agent: Agent, tag: str) -> None:
        await agent.run(
            {
                "steps": [
                    {"id": "track", "app": MPRIS, "tool": "metadata", "args": {"player": "mpv"}},
                    {
                        "id": "tell",
                        "app": NOTIFICATIONS,
                        "tool": "notify",
                        "args": {
                            "app_name": "bench",
                            "summary": f'Now playing: ${{steps.track.result."xesam:title"}} {tag}',
                        },
                    },
                ],
                "output": '${steps.track.result."xesam:title"}',
            }
        )

    def now_playing_check(found: Desktop, tag: str) -> str | None:
        return None if found.notified(f"Now playing: {title} {tag}") else "dunst's history lacks the notification"

    return Task(
        "1 track → notify", needing("mpv", "dunst"), now_playing_today, now_playing_plan, nothing, now_playing_check
    )


def quiet(found: Desktop) -> Task:
    """2. Every player paused, do-not-disturb on."""

    async def quiet_today(agent: Agent, tag: str) -> None:
        await agent.guide(MPRIS)
        for player in await agent.exec(MPRIS, "list_players"):
            await agent.exec(MPRIS, "pause", player=player["player"])
        await agent.guide(DUNST)
        await agent.exec(DUNST, "set_do_not_disturb", on=True)

    async def quiet_plan(agent: Agent, tag: str) -> None:
        await agent.run(
            {
                "steps": [
                    {"id": "players", "app": MPRIS, "tool": "list_players"},
                    {
                        "id": "pause",
                        "app": MPRIS,
                        "tool": "pause",
                        "forEach": "${steps.players.result}",
                        "args": {"player": "${item.player}"},
                    },
                    {"id": "quiet", "app": DUNST, "tool": "set_do_not_disturb", "args": {"on": True}},
                ]
            }
        )

    def quiet_reset(found: Desktop) -> None:
        found.dunstctl("set-paused", "false")
        found.play_all()

    def quiet_check(found: Desktop, tag: str) -> str | None:
        playing = [p for p in found.players if found.status(p) != "Paused"]
        if playing:
            return f"not paused: {', '.join(playing)}"
        return None if found.dunstctl("is-paused") == "true" else "do-not-disturb is off"

    name = f"2 pause {len(found.players)} players + DND"
    return Task(name, needing("mpv", "dunst"), quiet_today, quiet_plan, quiet_reset, quiet_check)


def battery(found: Desktop, below: float) -> Task:
    """3. The battery read (upower's DisplayDevice: 0 % without a battery), power-saver below `below` %."""

    async def today(agent: Agent, tag: str) -> None:
        await agent.guide(UPOWER)
        battery = await agent.exec(UPOWER, "battery")
        if battery["Percentage"] < below:
            await agent.guide(PROFILES)
            await agent.exec(PROFILES, "set_power_profile", profile="power-saver")

    async def plan(agent: Agent, tag: str) -> None:
        await agent.run(
            {
                "steps": [
                    {"id": "battery", "app": UPOWER, "tool": "battery"},
                    {
                        "id": "save",
                        "app": PROFILES,
                        "tool": "set_power_profile",
                        "if": "${steps.battery.result.Percentage < inputs.below}",
                        "args": {"profile": "power-saver"},
                    },
                ],
                "inputs": {"below": below},
                "output": "${steps.battery.result.Percentage}",
            }
        )

    def check(found: Desktop, tag: str) -> str | None:
        want = "power-saver" if found.battery() < below else "balanced"
        got = found.profile("get")
        return None if got == want else f"the profile is {got}, not {want}"

    name = f"3 battery < {below:g} %"
    if found.system is not None:
        name += " → saver" if found.battery() < below else ": stays"
    return Task(name, needing("system"), today, plan, balanced, check)


def torrent(found: Desktop) -> Task:
    """4. A torrent added, its name notified."""

    async def torrent_today(agent: Agent, tag: str) -> None:
        await agent.guide(TRANSMISSION)
        added = await agent.exec(TRANSMISSION, "add_torrent", source=str(found.torrent), paused=True)
        name = added["arguments"]["torrent-added"]["name"]
        await agent.guide(NOTIFICATIONS)
        await agent.exec(NOTIFICATIONS, "notify", app_name="bench", summary=f"Added {name} {tag}")

    async def torrent_plan(agent: Agent, tag: str) -> None:
        added = '${steps.add.result.arguments."torrent-added".name}'
        await agent.run(
            {
                "steps": [
                    {
                        "id": "add",
                        "app": TRANSMISSION,
                        "tool": "add_torrent",
                        "args": {"source": str(found.torrent), "paused": True},
                    },
                    {
                        "id": "tell",
                        "app": NOTIFICATIONS,
                        "tool": "notify",
                        "args": {"app_name": "bench", "summary": f"Added {added} {tag}"},
                    },
                ]
            }
        )

    def torrent_check(found: Desktop, tag: str) -> str | None:
        assert found.rpc is not None
        names = [t["name"] for t in found.rpc.torrents("name")]
        if names != ["field-notes.txt"]:
            return f"Transmission has {names}"
        return None if found.notified(f"Added field-notes.txt {tag}") else "dunst's history lacks the notification"

    name = "4 torrent → notify"
    return Task(name, needing("transmission", "dunst"), torrent_today, torrent_plan, no_torrents, torrent_check)


def rollback(found: Desktop) -> Task:
    """5. The volume lowered, a step failing, the volume put back."""

    async def rollback_today(agent: Agent, tag: str) -> None:
        await agent.guide(MPRIS)
        before = await agent.exec(MPRIS, "volume", player="mpv")
        await agent.exec(MPRIS, "set_volume", player="mpv", level=0.2)
        ok, _ = await agent.call("aai_exec", {"app": MPRIS, "tool": "volume", "args": {"player": "no-such-player"}})
        if ok:
            raise RuntimeError("the failing step did not fail")
        await agent.exec(MPRIS, "set_volume", player="mpv", level=before)

    async def rollback_plan(agent: Agent, tag: str) -> None:
        report = await agent.run(
            {
                "steps": [
                    {"id": "lower", "app": MPRIS, "tool": "set_volume", "args": {"player": "mpv", "level": 0.2}},
                    {
                        "id": "broken",
                        "app": MPRIS,
                        "tool": "volume",
                        "args": {"player": "no-such-player"},
                        "if": "${steps.lower.status == 'ok'}",
                    },
                ]
            },
            ok=False,
        )
        if report["status"] != "rolledBack":
            raise RuntimeError(f"the plan ended {report['status']}, not rolledBack")

    def rollback_reset(found: Desktop) -> None:
        assert found.mpv is not None
        found.mpv.command("set_property", "volume", 70)

    def rollback_check(found: Desktop, tag: str) -> str | None:
        assert found.mpv is not None
        volume = found.mpv.property("volume")
        return None if volume == 70 else f"mpv's volume is {volume}, not back to 70"

    name = "5 volume, fail, rollback"
    return Task(name, needing("mpv"), rollback_today, rollback_plan, rollback_reset, rollback_check)


def tasks(found: Desktop) -> list[Task]:
    """The five tasks, the third with two thresholds so that its `if` goes both ways."""
    return [now_playing(found), quiet(found), battery(found, 20), battery(found, 0), torrent(found), rollback(found)]
