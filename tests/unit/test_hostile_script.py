"""`scripts/hostile` counts hostile cases per area and fails when one fails."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def hostile(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROOT / "scripts" / "hostile"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def row(output: str, area: str) -> list[str]:
    return next(line.split() for line in output.splitlines() if line.startswith(area + " "))


def test_counts_the_cases_of_each_area() -> None:
    done = hostile("tests/unit/test_address_guard.py", "-k", "embedded_loopback")
    assert done.returncode == 0, done.stdout + done.stderr
    assert row(done.stdout, "address-guard") == ["address-guard", "4", "4", "0"]


def test_a_failing_case_is_counted_and_fails_the_run(tmp_path: Path) -> None:
    case = tmp_path / "test_sample.py"
    case.write_text(
        "import pytest\n\n"
        "@pytest.mark.hostile('sample')\n"
        "@pytest.mark.parametrize('n', [1, 2, 3])\n"
        "def test_n(n: int) -> None:\n"
        "    assert n != 2\n"
    )
    done = hostile("-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path), str(case))
    assert done.returncode != 0
    assert row(done.stdout, "sample") == ["sample", "3", "2", "1"]
