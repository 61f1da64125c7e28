"""Golden files: each descriptor shape, every seed example and every bundled example → the normalised model."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from aai_gateway.descriptor.validate import load
from tests.support import EXAMPLES

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
INPUTS = sorted([*GOLDEN.glob("seeds/*.json"), *GOLDEN.glob("shapes/*.json"), *EXAMPLES.glob("*/aai.json")])
UPDATE = os.environ.get("AAI_UPDATE_GOLDEN") == "1"


def golden_name(source: Path) -> str:
    return source.parent.name + ".json" if source.name == "aai.json" else source.name


@pytest.mark.parametrize("source", INPUTS, ids=golden_name)
def test_normalised_form_matches_golden(source: Path) -> None:
    loaded = load(source)
    assert loaded.descriptor is not None, [str(p) for p in loaded.problems]
    actual = loaded.descriptor.to_json()
    target = GOLDEN / "normalised" / golden_name(source).replace(".json", ".normalised.json")
    if UPDATE:
        target.parent.mkdir(exist_ok=True)
        target.write_text(json.dumps(actual, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    assert target.exists(), f"no golden file {target.name}; run with AAI_UPDATE_GOLDEN=1 and read it"
    assert actual == json.loads(target.read_text("utf-8"))


def test_every_shape_is_covered() -> None:
    shapes = {d.shape for d in (load(p).descriptor for p in INPUTS) if d is not None}
    assert shapes == {"multi", "single", "camel"}


@pytest.mark.parametrize("source", sorted(GOLDEN.glob("broken-verbatim/*.json")), ids=lambda p: p.name)
def test_seed_examples_with_elisions_are_reported_with_line_and_column(source: Path) -> None:
    loaded = load(source)
    assert not loaded.ok
    [problem] = loaded.problems
    assert problem.message.startswith("invalid JSON at line ")
    assert ", column " in problem.message
