"""A stdio MCP server that misbehaves on purpose, for the hostile-server corpus. It speaks JSON lines by
hand (no SDK), so it can send what no well-made server would: bad schemas, odd names, endless pages,
floods, secrets on stderr, a crash, a hang, a child that outlives it.

    python -m tests.mcpservers.hostile_server PLAN.json

PLAN.json holds:
- "tools": the raw `tools` list `tools/list` answers with (any JSON; default one tool `echo`);
- "toolsLine": a raw line sent as the whole `tools/list` answer instead (`{id}` is replaced by the id);
- "pages": when set to N > 0, `tools/list` always answers with a `nextCursor`, each page holding `tools`
  repeated N times (endless pagination);
- "calls": by tool name, a list of actions run in order for `tools/call`:
  {"reply": RESULT} answer with RESULT (a CallToolResult object) and stop;
  {"echo": true} answer with the arguments as JSON text;
  {"env": NAME} answer with the value of the environment variable NAME as text;
  {"stderr": TEXT} write TEXT and a newline to stderr ({"stderr": TEXT, "end": ""}: TEXT alone, part of a line);
  {"argv": true} answer with the server's own arguments after PLAN.json, as a JSON list;
  {"notify": N} send N `notifications/tools/list_changed` (with "method" and "params": N of that notification);
  {"log": N, "fill": BYTES, "level": LEVEL} send N `notifications/message` of LEVEL (default info) whose data is
  {"n": 0..N-1, "text": BYTES x's} (a flood, or one huge message);
  {"ask": TEXT} ask the client (`elicitation/create`, message TEXT) and answer with its answer as JSON text;
  {"hang": true} never answer (sleep until killed);
  {"exit": CODE} exit at once with CODE;
  {"fork": SECONDS} start a child that closes its fds 0-2 and sleeps SECONDS (keeps the process group);
  {"touch": PATH} create the file PATH (proof that the server ran);
  {"sleep": SECONDS} wait before the next action.
- "capabilities": what `initialize` declares (default {"tools": {}});
- "requestsFile": a path each `resources/subscribe`, `resources/unsubscribe` and `logging/setLevel` is added
  to, one JSON line `[method, params]` each (they are answered with {});
- "ignoreEof": true: keep running after stdin closes (as a careless server does), until killed.
- "ignoreTerm": true: ignore SIGTERM.
- "startFile": a path written with the server's pid when it starts (proof that it was started).
- "argvFile": a path written with the server's own arguments after PLAN.json, as a JSON list, when it starts.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

PLAN: dict[str, Any] = json.loads(Path(sys.argv[1]).read_text()) if len(sys.argv) > 1 else {}
DEFAULT_TOOLS = [{"name": "echo", "description": "Echoes its arguments", "inputSchema": {"type": "object"}}]


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request_id: Any, result: Any) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def text(value: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}]}


def fork(seconds: float) -> None:
    if os.fork() == 0:
        for fd in (0, 1, 2):
            os.close(fd)
        time.sleep(seconds)
        os._exit(0)


def call(request_id: Any, params: dict[str, Any]) -> None:
    name = params.get("name")
    for action in PLAN.get("calls", {}).get(name, [{"echo": True}]):
        if "reply" in action:
            return answer(request_id, action["reply"])
        if "echo" in action:
            return answer(request_id, text(json.dumps(params.get("arguments") or {})))
        if "env" in action:
            return answer(request_id, text(os.environ.get(action["env"], "")))
        if "ask" in action:
            return answer(request_id, text(json.dumps(ask(action["ask"]))))
        if "argv" in action:
            return answer(request_id, text(json.dumps(sys.argv[2:])))
        if "stderr" in action:
            sys.stderr.write(action["stderr"] + action.get("end", "\n"))
            sys.stderr.flush()
        elif "notify" in action:
            notification = {"jsonrpc": "2.0", "method": action.get("method", "notifications/tools/list_changed")}
            if "params" in action:
                notification["params"] = action["params"]
            for _ in range(action["notify"]):
                send(notification)
        elif "log" in action:
            filler = "x" * action.get("fill", 0)
            for n in range(action["log"]):
                params = {"level": action.get("level", "info"), "data": {"n": n, "text": filler}}
                send({"jsonrpc": "2.0", "method": "notifications/message", "params": params})
        elif "hang" in action:
            while True:
                time.sleep(3600)
        elif "exit" in action:
            sys.stdout.flush()
            os._exit(action["exit"])
        elif "fork" in action:
            fork(action["fork"])
        elif "touch" in action:
            Path(action["touch"]).touch()
        elif "sleep" in action:
            time.sleep(action["sleep"])
    return answer(request_id, text("done"))


def ask(message: str) -> Any:
    """The client's answer to an elicitation request (its result or its error)."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    send(
        {
            "jsonrpc": "2.0",
            "id": "ask",
            "method": "elicitation/create",
            "params": {"message": message, "requestedSchema": schema},
        }
    )
    for line in sys.stdin:
        reply = json.loads(line)
        if reply.get("id") == "ask" and "method" not in reply:
            return reply.get("result", reply.get("error"))
    return None


def tools_list(request_id: Any, params: dict[str, Any]) -> None:
    if "toolsLine" in PLAN:
        sys.stdout.write(PLAN["toolsLine"].replace("{id}", json.dumps(request_id)) + "\n")
        sys.stdout.flush()
        return None
    tools = PLAN.get("tools", DEFAULT_TOOLS)
    pages = int(PLAN.get("pages", 0))
    if pages > 0:
        cursor = int(params.get("cursor") or 0) + 1
        return answer(request_id, {"tools": tools * pages, "nextCursor": str(cursor)})
    return answer(request_id, {"tools": tools})


def main() -> None:
    if PLAN.get("ignoreTerm"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "startFile" in PLAN:
        Path(PLAN["startFile"]).write_text(str(os.getpid()))
    if "argvFile" in PLAN:
        Path(PLAN["argvFile"]).write_text(json.dumps(sys.argv[2:]))
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        method, request_id, params = message.get("method"), message.get("id"), message.get("params") or {}
        if request_id is None:
            continue
        if method == "initialize":
            version = params.get("protocolVersion", "2025-11-25")
            server = {"name": "hostile", "version": "1.0.0"}
            capabilities = PLAN.get("capabilities", {"tools": {}})
            answer(request_id, {"protocolVersion": version, "capabilities": capabilities, "serverInfo": server})
        elif method == "tools/list":
            tools_list(request_id, params)
        elif method == "tools/call":
            call(request_id, params)
        elif method == "ping":
            answer(request_id, {})
        elif method in ("resources/subscribe", "resources/unsubscribe", "logging/setLevel"):
            if "requestsFile" in PLAN:
                with Path(PLAN["requestsFile"]).open("a") as requests:
                    requests.write(json.dumps([method, params]) + "\n")
            answer(request_id, {})
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no such method"}})
    while PLAN.get("ignoreEof"):
        time.sleep(3600)


if __name__ == "__main__":
    main()
