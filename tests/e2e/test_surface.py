"""The whole MCP surface over both transports: resource model, strict names, error styles, hot reload."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import ClientSession, MCPDeprecationWarning, MCPError

from tests.e2e.mcp_client import Inbox, error_of, http_session, stdio_session, text_of, web_gateway
from tests.support import EXAMPLES, FIXED_TOOLS, TEST_APPS, Bus, install_descriptor

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

Connect = Callable[..., AbstractAsyncContextManager[ClientSession]]
ECHO = TEST_APPS / "dev.aai.echo" / "aai.json"


def make_home(tmp_path: Path, config: dict[str, Any] | None = None) -> Path:
    home = tmp_path / "home"
    install_descriptor(home / ".aai", ECHO)
    broken = home / ".aai" / "org.example.broken"
    broken.mkdir()
    (broken / "aai.json").write_text('{"schema_version": "1.0", "appId": "org.example.broken"}')
    if config is not None:
        (home / ".aai" / "config.json").write_text(json.dumps(config))
    return home


@pytest.fixture(params=["stdio", "http"])
def connect(request: pytest.FixtureRequest, bus: Bus, tmp_path: Path) -> Connect:
    """Open an SDK client session to the installed gateway over the parametrized transport."""

    @asynccontextmanager
    async def open_session(home: Path, inbox: Inbox | None = None) -> AsyncIterator[ClientSession]:
        env = {"HOME": str(home), "DBUS_SESSION_BUS_ADDRESS": bus.address, "AAI_PLATFORM": "linux"}
        if request.param == "stdio":
            async with stdio_session(env, tmp_path / "stderr.log", inbox=inbox) as session:
                yield session
        else:
            with web_gateway({**bus.env(), **env}, tmp_path / "stderr.log") as url:
                async with http_session(url, inbox=inbox) as session:
                    yield session

    return open_session


async def test_resource_model_lists_reads_and_runs_tools_directly(
    connect: Connect, echo_app: None, tmp_path: Path
) -> None:
    async with connect(make_home(tmp_path)) as session:
        [resource] = (await session.list_resources()).resources
        assert (str(resource.uri), resource.name, resource.mime_type) == (
            "app:dev.aai.echo",
            "Echo",
            "application/aai+json",
        )
        assert resource.description == "The test suite's own DBus service: echoes values of every basic type"

        read = await session.read_resource("app:dev.aai.echo")
        [content] = read.contents
        assert json.loads(getattr(content, "text", "")) == json.loads(ECHO.read_text())

        assert text_of(await session.call_tool("dev.aai.echo:echo", {"text": "direct"})) == "direct"
        error = await error_of(session, "dev.aai.echo:echo", {"txt": "x"})
        assert (error.code, error.data["type"]) == (-32005, "INVALID_PARAMS")
        error = await error_of(session, "dev.aai.echo:nope", {})
        assert error.code == -32003
        error = await error_of(session, "no.such.app:echo", {})
        assert error.code == -32002

        with pytest.raises(MCPError, match=re.escape("no resource 'file:///etc/passwd'")) as caught:
            await session.read_resource("file:///etc/passwd")
        assert caught.value.error.code == -32602  # MCP's resource-not-found (SEP-2164), with the URI in data
        assert caught.value.error.data["uri"] == "file:///etc/passwd"
        with pytest.raises(MCPError, match=re.escape("no app 'no.such.app'")):
            await session.read_resource("app:no.such.app")


async def test_strict_names_are_listed_and_both_spellings_are_called(
    connect: Connect, echo_app: None, tmp_path: Path
) -> None:
    async with connect(make_home(tmp_path, {"toolNames": "strict"})) as session:
        names = [t.name for t in (await session.list_tools()).tools]
        assert names == [
            *FIXED_TOOLS,
            "app_dev_aai_echo",
        ]
        assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", n) for n in names)
        for guide_name in ("app_dev_aai_echo", "app:dev.aai.echo"):
            assert text_of(await session.call_tool(guide_name, {})).startswith("# Echo Operation Guide")
        for exec_name in ("aai_exec", "aai:exec"):
            result = await session.call_tool(exec_name, {"app": "dev.aai.echo", "tool": "echo", "args": {"text": "x"}})
            assert text_of(result) == "x"
        for direct in ("dev_aai_echo__echo", "dev.aai.echo:echo"):
            assert text_of(await session.call_tool(direct, {"text": "y"})) == "y"
        error = await error_of(session, "web_discover", {"url": "http://example.com"})
        assert error.code == -32004


async def test_app_ids_complete_in_the_descriptor_template(connect: Connect, tmp_path: Path) -> None:
    home = make_home(tmp_path)
    install_descriptor(home / ".aai", EXAMPLES / "dev.aai.notes" / "aai.json")
    async with connect(home) as session:
        [template] = (await session.list_resource_templates()).resource_templates
        assert template.uri_template == "app:{appId}"
        ref = types.ResourceTemplateReference(type="ref/resource", uri="app:{appId}")
        completed = await session.complete(ref, {"name": "appId", "value": "dev.aai."})
        assert completed.completion.values == ["dev.aai.echo", "dev.aai.notes"]
        assert (await session.list_prompts()).prompts == []


# Every error code that can arise without a platform-specific app, and how to cause it.
CAUSES: list[tuple[int, str, str, dict[str, Any]]] = [
    (-32001, "AUTOMATION_FAILED", "aai_exec", {"app": "dev.aai.echo", "tool": "fail", "args": {"message": "m"}}),
    (-32002, "APP_NOT_FOUND", "aai_exec", {"app": "no.such.app", "tool": "echo", "args": {}}),
    (-32003, "TOOL_NOT_FOUND", "aai_exec", {"app": "dev.aai.echo", "tool": "nope", "args": {}}),
    (-32005, "INVALID_PARAMS", "aai_exec", {"app": "dev.aai.echo", "tool": "echo", "args": {"text": 5}}),
    (-32004, "PERMISSION_DENIED", "web_discover", {"url": "http://example.com"}),
    (-32007, "AAI_JSON_INVALID", "aai_exec", {"app": "org.example.broken", "tool": "x", "args": {}}),
    (-32007, "AAI_JSON_INVALID", "app:org.example.broken", {}),  # not listed, so only this spelling
    (-32008, "TIMEOUT", "aai_exec", {"app": "dev.aai.echo", "tool": "sleep", "args": {"seconds": 3}}),
]


@pytest.mark.parametrize("style", ["jsonrpc", "result"])
async def test_error_styles_carry_code_and_type(connect: Connect, echo_app: None, tmp_path: Path, style: str) -> None:
    async with connect(make_home(tmp_path, {"errorStyle": style})) as session:
        for code, kind, tool, arguments in CAUSES:
            if style == "jsonrpc":
                error = await error_of(session, tool, arguments)
                assert (error.code, error.data["type"]) == (code, kind), error
                assert error.message.endswith(error.data["detail"])
            else:
                result = await session.call_tool(tool, arguments)
                assert result.is_error, result
                assert result.structured_content is not None
                assert result.structured_content["error"]["code"] == code
                assert result.structured_content["error"]["type"] == kind
                assert text_of_error(result).startswith(f"{kind} ({code}): ")


def text_of_error(result: Any) -> str:
    return str(result.content[0].text)


async def test_app_not_running_in_both_styles(connect: Connect, tmp_path: Path) -> None:
    async with connect(make_home(tmp_path, {"errorStyle": "result"})) as session:
        result = await session.call_tool("aai_exec", {"app": "dev.aai.echo", "tool": "echo", "args": {"text": "x"}})
        assert result.structured_content == {
            "error": {"code": -32009, "type": "APP_NOT_RUNNING", "detail": result.structured_content["error"]["detail"]}
        }


async def test_hot_reload_adds_changes_keeps_and_removes_apps(connect: Connect, tmp_path: Path) -> None:
    home = make_home(tmp_path)
    aai = home / ".aai"
    inbox = Inbox()
    async with connect(home, inbox) as session:

        async def listed() -> dict[str, str]:
            return {t.name: t.description or "" for t in (await session.list_tools()).tools}

        assert "app_dev_aai_notes" not in await listed()
        with pytest.warns(MCPDeprecationWarning):  # a 2025-era request, which this session speaks
            await session.subscribe_resource("app:dev.aai.echo")

        install_descriptor(aai, EXAMPLES / "dev.aai.notes" / "aai.json")
        await inbox.wait_for("notifications/tools/list_changed")
        await inbox.wait_for("notifications/resources/list_changed")
        assert "app_dev_aai_notes" in await listed()
        assert "app:dev.aai.notes" in [str(r.uri) for r in (await session.list_resources()).resources]

        inbox.methods.clear()
        echo = aai / "dev.aai.echo" / "aai.json"
        changed = json.loads(echo.read_text())
        changed["description"] = "Changed while running"
        echo.write_text(json.dumps(changed))
        await inbox.wait_for("notifications/tools/list_changed")
        await inbox.wait_for("notifications/resources/updated")
        assert (await listed())["app_dev_aai_echo"].startswith("【Echo|回声】Changed while running.")

        echo.write_text('{"broken": ')
        (aai / "later.app").mkdir()
        install_descriptor(aai / "later.app", TEST_APPS / "io.mpv" / "aai.json")
        shutil.move(str(aai / "later.app" / "io.mpv" / "aai.json"), str(aai / "later.app" / "aai.json"))
        inbox.methods.clear()
        await inbox.wait_for("notifications/tools/list_changed")
        tools = await listed()
        assert tools["app_dev_aai_echo"].startswith("【Echo|回声】Changed while running.")
        assert "app_io_mpv" in tools

        inbox.methods.clear()
        shutil.rmtree(aai / "dev.aai.notes")
        await inbox.wait_for("notifications/tools/list_changed")
        assert "app_dev_aai_notes" not in await listed()


async def test_a_call_after_a_rescan_goes_by_the_descriptor_read_again(connect: Connect, tmp_path: Path) -> None:
    """What a call of a tool resolves to is kept between calls, and dropped when the descriptor changes."""
    home = make_home(tmp_path, {"errorStyle": "result"})
    echo = home / ".aai" / "dev.aai.echo" / "aai.json"
    call = {"app": "dev.aai.echo", "tool": "echo", "args": {"text": "x"}}
    inbox = Inbox()
    async with connect(home, inbox) as session:
        for _ in range(2):
            result = await session.call_tool("aai_exec", call)
            assert result.structured_content["error"]["type"] == "APP_NOT_RUNNING", "the app is not on the bus"
        changed = json.loads(echo.read_text())
        for tool in changed["platforms"]["linux"]["tools"]:
            tool["name"] = "shout" if tool["name"] == "echo" else tool["name"]
        echo.write_text(json.dumps(changed))
        await inbox.wait_for("notifications/tools/list_changed")
        result = await session.call_tool("aai_exec", call)
        assert result.structured_content["error"]["type"] == "TOOL_NOT_FOUND"
        assert "shout" in result.structured_content["error"]["detail"]


async def test_periodic_rescan_finds_what_no_watcher_saw(connect: Connect, tmp_path: Path) -> None:
    home = make_home(tmp_path, {"scanPaths": ["~/.aai", "~/later"], "scanIntervalMinutes": 0.01})
    inbox = Inbox()
    async with connect(home, inbox) as session:
        assert "app_dev_aai_notes" not in [t.name for t in (await session.list_tools()).tools]
        install_descriptor(home / "later", EXAMPLES / "dev.aai.notes" / "aai.json")
        await inbox.wait_for("notifications/tools/list_changed")
        assert "app_dev_aai_notes" in [t.name for t in (await session.list_tools()).tools]
