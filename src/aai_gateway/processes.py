"""Other processes of this machine, as the gateway sees them."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """Whether process `pid` exists (another user's counts: it is there, only not ours to signal)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True
