"""Values kept per object: found by the object itself, never by an equal one or by the id of one gone."""

from __future__ import annotations

import gc
import weakref

from aai_gateway.memo import PerObject


def test_a_value_is_found_by_its_object_and_detail_only() -> None:
    kept: PerObject[str] = PerObject()
    schema = {"type": "object"}
    assert kept.put(schema, "a") == "a"
    assert kept.put(schema, "b", detail="sig") == "b"
    assert (kept.get(schema), kept.get(schema, "sig")) == ("a", "b")
    assert kept.get({"type": "object"}) is None, "an equal object is another object"
    assert kept.get(schema, "other") is None


class Tool:
    pass


def test_an_entry_keeps_its_object_so_its_id_cannot_be_reused() -> None:
    kept: PerObject[str] = PerObject()
    owner = Tool()
    alive = weakref.ref(owner)
    kept.put(owner, "value")
    del owner
    gc.collect()
    assert alive() is not None
    kept.clear()
    gc.collect()
    assert alive() is None


def test_past_its_limit_it_starts_over() -> None:
    kept: PerObject[int] = PerObject(limit=3)
    owners = [object() for _ in range(4)]
    for n, owner in enumerate(owners[:3]):
        kept.put(owner, n)
    assert len(kept) == 3
    kept.put(owners[3], 3)
    assert len(kept) == 1
    assert kept.get(owners[0]) is None
    assert kept.get(owners[3]) == 3
