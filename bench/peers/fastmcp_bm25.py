"""Runs inside a venv holding only `fastmcp`: ranks the benchmark's questions with FastMCP's own BM25 index
(`BM25SearchTransform`'s `_BM25Index`, over the text `_extract_searchable_text` makes of each tool).

    python fastmcp_bm25.py WORK.json OUT.json

WORK.json holds {"tools": [{name, description, parameters}], "queries": [text], "k": int}; OUT.json gets the
indices of each query's best k tools and the search time of each query in milliseconds.
"""

import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from fastmcp.server.transforms.search.base import _extract_searchable_text
from fastmcp.server.transforms.search.bm25 import _BM25Index

work = json.loads(Path(sys.argv[1]).read_text())
index = _BM25Index()
index.build([_extract_searchable_text(SimpleNamespace(**tool)) for tool in work["tools"]])
ranked, times = [], []
for query in work["queries"]:
    started = time.perf_counter()
    ranked.append(index.query(query, work["k"]))
    times.append((time.perf_counter() - started) * 1000)
Path(sys.argv[2]).write_text(json.dumps({"ranked": ranked, "ms": times}))
