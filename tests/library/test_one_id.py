"""One app, one id: the examples and the library never describe the same app twice, and the quick start
installs what the library describes from the library (so `install ID` and `library` agree after it)."""

from __future__ import annotations

import re
from pathlib import Path

from aai_gateway.descriptor.validate import load
from aai_gateway.library.entries import bundled
from aai_gateway.library.presence import matches
from tests.support import EXAMPLES, ROOT


def examples() -> list[Path]:
    return sorted(EXAMPLES.glob("*/aai.json"))


def services(path: Path) -> set[tuple[str, str]]:
    """The (bus, DBus service) pairs a descriptor drives."""
    app = load(path).descriptor
    assert app is not None, path
    return {
        (str(b.options.get("bus", "session")), str(b.options["service"]))
        for b in app.bindings.values()
        if b.automation == "dbus" and "service" in b.options
    }


def quickstart_library_apps() -> list[str]:
    found = re.search(r"^LIBRARY_APPS=\(([^)]*)\)$", (ROOT / "scripts" / "quickstart").read_text(), re.MULTILINE)
    assert found, "scripts/quickstart names the library entries it installs in LIBRARY_APPS=(...)"
    return found.group(1).split()


def test_no_example_has_a_library_id() -> None:
    library = {e.app_id for e in bundled().entries}
    assert {p.parent.name for p in examples()} & library == set()


def test_no_example_drives_a_service_a_library_entry_drives() -> None:
    for path in examples():
        for bus, service in services(path):
            for entry in bundled().entries:
                assert entry.presence is not None
                assert entry.descriptor is not None
                own = {(str(b.options.get("bus", "session")), str(b.options.get("service", "")))
                       for b in entry.descriptor.bindings.values()}  # fmt: skip
                same = [p for p in entry.presence.bus_names if entry.presence.bus == bus and matches(p, service)]
                same += [s for b, s in own if b == bus and matches(s, service)]
                assert not same, f"{path} drives {service} on the {bus} bus, as the library entry {entry.app_id} does"


def test_the_quick_start_installs_library_entries_by_their_ids() -> None:
    apps = quickstart_library_apps()
    assert apps, "the quick start installs some library entries"
    library = {e.app_id for e in bundled().entries}
    assert set(apps) <= library
    script = (ROOT / "scripts" / "quickstart").read_text()
    assert '"$BIN_DIR/aai-gateway" install "$app_id"' in script
    readme = (ROOT / "README.md").read_text()
    for app_id in apps:
        assert f"  {app_id}  " in readme, f"the README's quick start output lists {app_id}"
