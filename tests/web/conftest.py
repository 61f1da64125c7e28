from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.web.ui_support import Ui, make_ui


@pytest.fixture
def ui(tmp_path: Path) -> Iterator[Ui]:
    yield from make_ui(tmp_path)
