"""Logging: a rotating file under the AAI home plus stderr. Never stdout, which may carry the protocol."""

from __future__ import annotations

import logging
import sys
from logging.handlers import RotatingFileHandler
from pathlib import Path

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LOG_FILE = "gateway.log"


def configure(level: str, log_dir: Path | None, *, stderr_level: str | None = None) -> Path | None:
    """Send the gateway's logs to stderr and to `log_dir/gateway.log`; return the file used, if any.

    `stderr_level` quiets the terminal of a one-shot command while its file keeps `level`.
    """
    root = logging.getLogger("aai_gateway")
    levels = [logging.getLevelName(level.upper()), logging.getLevelName((stderr_level or level).upper())]
    root.setLevel(min(levels))
    root.propagate = False
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    formatter = logging.Formatter(FORMAT)
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setLevel(levels[1])
    stderr.setFormatter(formatter)
    root.addHandler(stderr)
    if log_dir is None:
        return None
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
        file_handler = RotatingFileHandler(log_dir / LOG_FILE, maxBytes=2_000_000, backupCount=3, encoding="utf-8")
    except OSError as exc:
        root.warning("cannot write the log file in %s (%s); logging to stderr only", log_dir, exc)
        return None
    file_handler.setLevel(levels[0])
    file_handler.setFormatter(formatter)
    root.addHandler(file_handler)
    return log_dir / LOG_FILE
