"""Stand-in for pywin32's `pythoncom`: COM initialisation per thread, counted so tests can see it.

Every stand-in COM object refuses to be used from a thread that has not called CoInitialize, as COM does.
"""

from __future__ import annotations

import threading

_local = threading.local()
_lock = threading.Lock()
APARTMENTS = {"open": 0, "opened": 0}
"""Threads with COM initialised now, and ever."""


def CoInitialize() -> None:  # noqa: N802 - pywin32's names
    depth: int = getattr(_local, "depth", 0)
    _local.depth = depth + 1
    if depth == 0:
        with _lock:
            APARTMENTS["open"] += 1
            APARTMENTS["opened"] += 1


def CoUninitialize() -> None:  # noqa: N802 - pywin32's names
    depth: int = getattr(_local, "depth", 0)
    if depth == 0:
        raise RuntimeError("CoUninitialize without CoInitialize in this thread")
    _local.depth = depth - 1
    if depth == 1:
        with _lock:
            APARTMENTS["open"] -= 1


def initialised() -> bool:
    """Not part of pywin32: whether this thread has called CoInitialize (and not yet CoUninitialize)."""
    return getattr(_local, "depth", 0) > 0
