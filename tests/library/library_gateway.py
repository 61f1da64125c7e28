"""The installed gateway with library entries installed, driven through `aai_exec` by the MCP SDK client.

One place for every library test: the entries' folder, homes holding entries, and `Exec`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import ClientSession

from aai_gateway.descriptor.model import Undo
from aai_gateway.descriptor.validate import load
from tests.e2e.mcp_client import error_of, stdio_session, text_of
from tests.support import ROOT, Bus, install_descriptor

LIBRARY = ROOT / "src" / "aai_gateway" / "library" / "apps"


def library_home(home: Path, *app_ids: str) -> Path:
    """A HOME whose ~/.aai holds the library's descriptors of `app_ids`, as written in the package."""
    for app_id in app_ids:
        install_descriptor(home / ".aai", LIBRARY / app_id / "aai.json")
    return home


def gateway_env(bus: Bus, home: Path, *app_ids: str, **extra: str) -> dict[str, str]:
    """An AAI home with the library's `app_ids` installed, and the gateway's environment on `bus`."""
    library_home(home, *app_ids)
    return {"HOME": str(home), "DBUS_SESSION_BUS_ADDRESS": bus.address, "AAI_PLATFORM": "linux", **extra}


def read_only_tools(app_id: str) -> list[str]:
    """The tools an entry marks read-only, in its order: a run-level test calls every one of them."""
    doc = json.loads((LIBRARY / app_id / "aai.json").read_text())
    return [t["name"] for t in doc["tools"] if (t.get("annotations") or {}).get("readOnlyHint")]


def declared_undo(app_id: str, tool: str) -> Undo:
    """The undo the library's entry `app_id` declares for `tool`."""
    app = load(LIBRARY / app_id / "aai.json").descriptor
    assert app is not None
    found = app.find_tool("linux", tool)
    assert found is not None, tool
    assert found[1].undo is not None, f"{app_id} declares no undo for {tool}"
    return found[1].undo


@dataclass(frozen=True, slots=True)
class Step:
    """A call made as a plan makes it: the undo's before read first, then the tool."""

    args: dict[str, Any]
    result: Any
    before: Any
    undo: Undo

    def undo_args(self) -> dict[str, Any]:
        return self.undo.arguments(self.args, self.result, self.before)


class Exec:
    """`aai_exec` calls of one app in one session, keeping which tools were called."""

    def __init__(self, session: ClientSession, app_id: str) -> None:
        self.session = session
        self.app_id = app_id
        self.called: set[str] = set()

    async def __call__(self, tool: str, **args: Any) -> Any:
        self.called.add(tool)
        result = await self.session.call_tool("aai_exec", {"app": self.app_id, "tool": tool, "args": args})
        text = text_of(result)
        try:
            return json.loads(text)
        except json.JSONDecodeError:  # the gateway gives a string result as it is, other values as JSON
            return text

    async def step(self, tool: str, **args: Any) -> Step:
        """`tool` called as a plan's step is, with the entry's declared undo's before read run just before it."""
        undo = declared_undo(self.app_id, tool)
        before = await self(undo.before.tool, **undo.before.arguments(args)) if undo.before else None
        return Step(args, await self(tool, **args), before, undo)

    async def undo(self, step: Step) -> Any:
        """The step's declared undo, its arguments rendered over the step's arguments, result and before read."""
        return await self(step.undo.tool, **step.undo_args())

    async def error(self, tool: str, **args: Any) -> tuple[str, str]:
        """The error type and detail of a call that must fail."""
        self.called.add(tool)
        error = await error_of(self.session, "aai_exec", {"app": self.app_id, "tool": tool, "args": args})
        assert isinstance(error.data, dict), error
        return error.data["type"], error.data["detail"]

    async def tools(self) -> list[str]:
        """The tools the app's guide lists (`### name` headings)."""
        guide = text_of(await self.session.call_tool("app_" + self.app_id.replace(".", "_"), {}))
        return [line[4:] for line in guide.splitlines() if line.startswith("### ")]

    def missed(self) -> set[str]:
        """Read-only tools of the entry this session has not called."""
        return set(read_only_tools(self.app_id)) - self.called


@asynccontextmanager
async def driving(app_id: str, workdir: Path, env: Callable[[Path], dict[str, str]]) -> AsyncIterator[Exec]:
    """The installed gateway over stdio with the entry `app_id` installed in a HOME under `workdir`, whose
    environment `env` gives; on leaving, every read-only tool of the entry must have been called."""
    home = library_home(workdir / "home", app_id)
    async with stdio_session(env(home), workdir / "stderr.log") as session:
        run = Exec(session, app_id)
        yield run
        assert run.missed() == set(), f"read-only tools of {app_id} the test did not call"
