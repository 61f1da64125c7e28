"""How well `aai_search` finds the operation a request needs, on public data, beside FastMCP's BM25 index.

Run from the repository root with the venv the gateway is installed in:

    .venv/bin/python -m bench.search_quality [--semantic | --embeddings] [--questions N]

The catalogue and the questions are the Berkeley Function Calling Leaderboard's, as they ship inside the
PyPI package `bfcl-eval` (2026.3.23): every distinct function (by name and description) of
`BFCL_v4_live_multiple.json` and `BFCL_v4_parallel_multiple.json` becomes one installed app with that one
tool, and each question's last user message is searched through the installed command over MCP (the SDK's
client over stdio, `aai_search` with limit 10). A question is found at k when one of the functions its
ground truth (`possible_answer/`) calls is among the first k hits. Printed: Recall@1, Recall@5, MRR (over
the first 10), the search time seen by the client (p50, p95), the gateway's memory before and after the
searches (after a first call that is no search, which loads what every call needs), and how often
search says that nothing fits for the questions of `BFCL_v4_live_irrelevance.json`.

The peer, in the same run: FastMCP's own BM25 index (`BM25SearchTransform`, PyPI `fastmcp` in a venv of its
own under bench/.cache) over the same tools, with the library's operations added to both sides (the gateway
always searches its library too), and the same questions; then the ratios. A second gateway, with the
catalogue padded to 2,000 tools with other BFCL functions, gives the search time at that size.

`--embeddings` turns `search.embeddings` on instead, against a local `/v1/embeddings` serving the same
wordllama vectors (`bench/embeddings_endpoint.py`); the searches start once the gateway has embedded every
operation (its log says so).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from aai_gateway.library.entries import bundled
from aai_gateway.search.sources import library
from bench.embeddings_endpoint import MODEL, wordllama_endpoint
from tests.e2e.mcp_client import stdio_session

CACHE = Path(__file__).parent / ".cache"
BFCL = "bfcl-eval==2026.3.23"
FASTMCP = "fastmcp==4.2.3"
SETS = ("BFCL_v4_live_multiple.json", "BFCL_v4_parallel_multiple.json")
PADDING = ("BFCL_v4_live_simple.json", "BFCL_v4_multiple.json", "BFCL_v4_simple_python.json")
IRRELEVANT = "BFCL_v4_live_irrelevance.json"
MARK = "AAI_BENCH_SEARCH"
K = 10
TYPES = {"dict": "object", "float": "number", "tuple": "array", "list": "array", "int": "integer", "bool": "boolean"}


@dataclass
class Question:
    text: str
    wanted: set[str]


def pip(python: str, *args: str) -> None:
    subprocess.run([python, "-m", "pip", "-q", *args], check=True, stdout=subprocess.DEVNULL)


def bfcl_zip() -> zipfile.ZipFile:
    wheels = list((CACHE / "bfcl").glob("bfcl_eval-*.whl"))
    if not wheels:
        pip(sys.executable, "download", "--no-deps", BFCL, "-d", str(CACHE / "bfcl"))
        wheels = list((CACHE / "bfcl").glob("bfcl_eval-*.whl"))
    return zipfile.ZipFile(wheels[0])


def lines(wheel: zipfile.ZipFile, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in wheel.read(f"bfcl_eval/data/{name}").decode().splitlines() if line.strip()]


def last_user(entry: dict[str, Any]) -> str:
    turn = entry["question"][-1]
    return str([m for m in turn if m["role"] == "user"][-1]["content"])


def load(wheel: zipfile.ZipFile) -> tuple[list[dict[str, Any]], list[Question]]:
    functions: dict[tuple[str, str], dict[str, Any]] = {}
    questions = []
    for name in SETS:
        answers = {a["id"]: a for a in lines(wheel, f"possible_answer/{name}")}
        for entry in lines(wheel, name):
            for function in entry["function"]:
                functions.setdefault((function["name"], function["description"]), function)
            wanted = {next(iter(call)) for call in answers[entry["id"]]["ground_truth"]}
            questions.append(Question(last_user(entry), wanted))
    return list(functions.values()), questions


def padding(wheel: zipfile.ZipFile, have: list[dict[str, Any]], size: int) -> list[dict[str, Any]]:
    seen = {(f["name"], f["description"]) for f in have}
    extra: list[dict[str, Any]] = []
    for name in PADDING:
        for entry in lines(wheel, name):
            for function in entry["function"]:
                key = (function["name"], function["description"])
                if key not in seen and len(have) + len(extra) < size:
                    seen.add(key)
                    extra.append(function)
    return extra


def schema(value: Any) -> Any:
    """BFCL's parameter types ("dict", "float", …) as JSON Schema's; what JSON Schema lacks ("any") left out."""
    if isinstance(value, dict):
        fixed = {k: schema(v) for k, v in value.items() if not (k == "type" and v == "any")}
        if isinstance(fixed.get("type"), str):
            fixed["type"] = TYPES.get(fixed["type"], fixed["type"])
        if "required" in fixed and not isinstance(fixed["required"], list):
            del fixed["required"]
        return fixed
    if isinstance(value, list):
        return [schema(v) for v in value]
    return value


def tool_name(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)
    return ("_" + cleaned if not (cleaned[0].isalpha() or cleaned[0] == "_") else cleaned)[:64]


def install(
    home: Path, functions: Sequence[dict[str, Any]], semantic: bool, embeddings: str | None = None
) -> dict[str, str]:
    """One app per function; the tool's name as installed → the function's own name."""
    names = {}
    for number, function in enumerate(functions):
        app_id = f"org.bfcl.f{number:04d}"
        tool = tool_name(function["name"])
        names[tool] = function["name"]
        doc = {
            "schemaVersion": "1.0",
            "version": "1.0.0",
            "platform": "web",
            "app": {"id": app_id, "name": {"en": f"Function {number}"}, "description": "A BFCL function"},
            "execution": {"type": "http", "baseUrl": "https://bfcl.invalid"},
            "tools": [
                {
                    "name": tool,
                    "description": function["description"],
                    "parameters": schema(function["parameters"]),
                    "execution": {"path": "/call", "method": "POST"},
                }
            ],
        }
        folder = home / ".aai" / app_id
        folder.mkdir(parents=True)
        (folder / "aai.json").write_text(json.dumps(doc))
    config: dict[str, Any] = {"consent": {"default": "allow"}, "search": {"semantic": semantic}}
    if embeddings is not None:
        config["search"]["embeddings"] = True
        config["llm"] = {"baseUrl": embeddings, "model": "none", "embeddingModel": MODEL}
    (home / ".aai" / "config.json").write_text(json.dumps(config))
    return names


def rss_mb(mark: str) -> float:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if f"{MARK}={mark}".encode() in (entry / "environ").read_bytes().split(b"\0"):
                status = (entry / "status").read_text()
                return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS"))) / 1024
        except (OSError, StopIteration):
            continue
    return float("nan")


@dataclass
class Run:
    ranked: list[list[str]]
    ms: list[float]
    unfit: int
    rss_before: float
    rss_indexed: float
    rss_after: float


async def gateway_run(
    home: Path, names: dict[str, str], queries: Sequence[str], irrelevant: Sequence[str], embedded: bool = False
) -> Run:
    mark = uuid.uuid4().hex
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "AAI_PLATFORM": "linux", MARK: mark}
    ranked, times, unfit = [], [], 0
    log = home / "gateway.log"
    log.touch()
    async with stdio_session(env, log) as session:
        await session.list_tools()
        await session.call_tool("aai_exec", {"app": "none", "tool": "none"})  # the first call loads the SDK's path
        before = rss_mb(mark)
        await session.call_tool("aai_search", {"query": "warm up", "limit": 1})
        with anyio.fail_after(600):
            while embedded and "operations embedded" not in log.read_text():
                await anyio.sleep(0.2)
        indexed = rss_mb(mark)
        for query in queries:
            started = time.perf_counter()
            result = await session.call_tool("aai_search", {"query": query[:1000], "limit": K})
            times.append((time.perf_counter() - started) * 1000)
            found = result.structured_content or {}
            ranked.append([names.get(hit["tool"], hit["tool"]) for hit in found.get("results", [])])
        for query in irrelevant:
            result = await session.call_tool("aai_search", {"query": query[:1000], "limit": K})
            unfit += not (result.structured_content or {}).get("fits", True)
        after = rss_mb(mark)
    return Run(ranked, times, unfit, before, indexed, after)


def peer_python() -> str:
    venv = CACHE / "fastmcp-venv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip(str(python), "install", FASTMCP)
    return str(python)


def peer_run(tools: list[dict[str, Any]], queries: Sequence[str], work: Path) -> tuple[list[list[str]], list[float]]:
    job, out = work / "peer-job.json", work / "peer-out.json"
    shown = [{"name": t["name"], "description": t["description"], "parameters": t["parameters"]} for t in tools]
    job.write_text(json.dumps({"tools": shown, "queries": list(queries), "k": K}))
    script = Path(__file__).parent / "peers" / "fastmcp_bm25.py"
    subprocess.run([peer_python(), str(script), str(job), str(out)], check=True)
    answer = json.loads(out.read_text())
    return [[tools[i]["name"] for i in row] for row in answer["ranked"]], answer["ms"]


def figures(ranked: Sequence[Sequence[str]], questions: Sequence[Question]) -> tuple[float, float, float]:
    at1 = at5 = mrr = 0.0
    for names, question in zip(ranked, questions, strict=True):
        for place, name in enumerate(names[:K]):
            if name in question.wanted:
                at1 += place == 0
                at5 += place < 5
                mrr += 1 / (place + 1)
                break
    count = len(questions)
    return at1 / count, at5 / count, mrr / count


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def library_tools() -> list[dict[str, Any]]:
    """The library's operations, as the peer's index takes tools: the gateway searches them too."""
    return [
        {"name": op.tool, "description": op.description, "parameters": dict(op.parameters)}
        for op in library(bundled().entries, set())
    ]


def main(semantic: bool, limit: int | None, embeddings: str | None = None) -> None:
    wheel = bfcl_zip()
    functions, questions = load(wheel)
    questions = questions[:limit] if limit else questions
    irrelevant = [last_user(e) for e in lines(wheel, IRRELEVANT)]
    queries = [q.text for q in questions]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "home").mkdir()
        names = install(work / "home", functions, semantic, embeddings)
        run = anyio.run(gateway_run, work / "home", names, queries, irrelevant, embeddings is not None)
        peer_ranked, peer_ms = peer_run([*functions, *library_tools()], queries, work)
        padded = [*functions, *padding(wheel, functions, 2000)]
        (work / "big").mkdir()
        big_names = install(work / "big", padded, semantic, embeddings)
        big = anyio.run(gateway_run, work / "big", big_names, queries[:300], [], embeddings is not None)
    ours, theirs = figures(run.ranked, questions), figures(peer_ranked, questions)
    library_count = len(library_tools())
    print(f"BFCL v4 live_multiple + parallel_multiple: {len(functions)} functions, {len(questions)} questions")
    signal = "search.embeddings (wordllama over HTTP)" if embeddings else "on" if semantic else "off"
    print(f"  (+ {library_count} library operations in both indexes); semantic signal {signal}")
    print(f"  {'':34} {'R@1':>7} {'R@5':>7} {'MRR':>7}")
    print(f"  {'aai_search (installed, over MCP)':34} {ours[0]:7.3f} {ours[1]:7.3f} {ours[2]:7.3f}")
    print(f"  {'FastMCP BM25SearchTransform index':34} {theirs[0]:7.3f} {theirs[1]:7.3f} {theirs[2]:7.3f}")
    ratios = [a / b if b else float("nan") for a, b in zip(ours, theirs, strict=True)]
    print(f"  {'ratio':34} {ratios[0]:7.2f} {ratios[1]:7.2f} {ratios[2]:7.2f}")
    print(f"  nothing fits: {len(questions) - sum(1 for r in run.ranked if r)} of {len(questions)} relevant questions")
    share = run.unfit / len(irrelevant)
    print(f"  nothing fits: {run.unfit} of {len(irrelevant)} questions of {IRRELEVANT} ({share:.1%})")
    p50, p95 = statistics.median(run.ms), percentile(run.ms, 0.95)
    print(
        f"  aai_search round trip over MCP, {len(functions) + library_count} tools: p50 {p50:.2f} ms, p95 {p95:.2f} ms"
    )
    print(f"  FastMCP index alone (no MCP), same tools: p50 {statistics.median(peer_ms):.2f} ms")
    size = len(padded) + library_count
    big_p50, big_p95 = statistics.median(big.ms), percentile(big.ms, 0.95)
    print(f"  aai_search round trip, {size} tools: p50 {big_p50:.2f} ms, p95 {big_p95:.2f} ms")
    print(
        f"  gateway RSS: {run.rss_before:.1f} MB before the first search, {run.rss_indexed:.1f} MB after it "
        f"(+{run.rss_indexed - run.rss_before:.1f} MB: the index), {run.rss_after:.1f} MB after all "
        f"(+{run.rss_after - run.rss_before:.1f} MB)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--semantic", action="store_true", help="Turn search.semantic on (needs wordllama).")
    parser.add_argument(
        "--embeddings", action="store_true", help="Turn search.embeddings on, against a local wordllama endpoint."
    )
    parser.add_argument("--questions", type=int, default=None, help="Only the first N questions.")
    options = parser.parse_args()
    if options.embeddings:
        with wordllama_endpoint() as url:
            main(options.semantic, options.questions, url)
    else:
        main(options.semantic, options.questions)
