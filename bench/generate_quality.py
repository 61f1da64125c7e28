"""How much of what `--generate` writes is more than a mechanical sentence, with and without the library.

Run from the repository root after `scripts/test` has made the venv:

    .venv/bin/python -m bench.generate_quality

Starts on one private session bus (and one Xvfb display) the apps that run here: dunst
(org.freedesktop.Notifications), mpv with mpv-mpris (org.mpris.MediaPlayer2.mpv), the notes example
(dev.aai.Notes) and the bus daemon itself (org.freedesktop.DBus); then every bundled library entry
verified at the run level whose bus names none of those own and whose command is installed, started
with no arguments. Each service is introspected and generated once; a tool counts as described when
its description came from the interface's own text or from the library, not the generator's plain
sentence ("Calls the DBus method …"). The share is printed per app and overall, without the library
(what the interface says) and with it.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from contextlib import ExitStack, suppress
from dataclasses import dataclass
from pathlib import Path

from aai_gateway.authoring import dbus_services, generate, knowledge
from aai_gateway.authoring.knowledge import Entry, Source
from tests.e2e.test_dunst import DUNSTRC, free_display
from tests.support import EXAMPLES, Bus, Mpv, running, start_app, stop, wait_until

START_WAIT = 10.0


@dataclass(frozen=True, slots=True)
class Row:
    app: str
    bus_name: str
    tools: int
    without: int
    """Tools described (interface text) without the library."""
    with_library: int
    """Tools described (interface text or library) with it."""
    from_library: int


def described(sources: Mapping[str, Source]) -> int:
    return sum(1 for source in sources.values() if source != "mechanical")


async def measure(app: str, bus_name: str, library: list[Entry]) -> Row:
    tree = await dbus_services.introspect_service(bus_name)
    made = generate.generate(bus_name, tree.objects)
    applied = knowledge.apply(copy.deepcopy(made.document), made.sources, library)
    return Row(
        app,
        bus_name,
        len(made.sources),
        described(made.sources),
        described(applied.sources),
        sum(1 for s in applied.sources.values() if s == "library"),
    )


def start(argv: list[str], env: Mapping[str, str], bus: Bus, names: list[str]) -> subprocess.Popen[bytes] | None:
    """`argv` on the bus; None (and stopped) when it owns none of `names` within START_WAIT seconds."""
    proc = subprocess.Popen(
        argv, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    with suppress(TimeoutError):
        wait_until(lambda: proc.poll() is not None or any(bus.has_owner(n) for n in names), START_WAIT, argv[0])
    if proc.poll() is None and any(bus.has_owner(n) for n in names):
        return proc
    stop(proc)
    return None


def run_level_entries() -> list[tuple[Entry, dict[str, object]]]:
    found = []
    for entry in knowledge.bundled():
        path = knowledge.bundled_folder() / entry.descriptor.app_id / "entry.json"
        try:
            meta = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            continue
        if meta.get("verified", {}).get("level") == "run":
            found.append((entry, meta))
    return found


async def bench(workdir: Path) -> tuple[list[Row], list[str]]:
    library = knowledge.bundled()
    rows: list[Row] = []
    skipped: list[str] = []
    with ExitStack() as stack:
        bus = Bus(workdir / "bus")
        stack.callback(bus.stop)
        os.environ["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        screen = stack.enter_context(free_display(workdir))
        env = bus.env(DISPLAY=screen)
        env.pop("WAYLAND_DISPLAY", None)
        (workdir / "dunstrc").write_text(DUNSTRC)
        dunst = start(["dunst", "-config", str(workdir / "dunstrc")], env, bus, ["org.freedesktop.Notifications"])
        if dunst is not None:
            stack.callback(stop, dunst)
        player = Mpv(bus, workdir)
        stack.callback(player.stop)
        notes = [
            sys.executable,
            str(EXAMPLES / "dev.aai.notes" / "notes_service.py"),
            "--store",
            str(workdir / "n.json"),
        ]
        stack.enter_context(running(start_app(notes, bus.env())))
        apps = [
            ("dunst", "org.freedesktop.Notifications"),
            ("mpv (mpv-mpris)", "org.mpris.MediaPlayer2.mpv"),
            ("notes example", "dev.aai.Notes"),
            ("DBus daemon", "org.freedesktop.DBus"),
        ]
        for name, bus_name in apps:
            rows.append(await measure(name, bus_name, library))
        measured = {bus_name for _, bus_name in apps}
        for entry, meta in run_level_entries():
            presence = meta.get("presence", {})
            assert isinstance(presence, dict)
            exact = [n for n in presence.get("busNames", []) if not n.endswith("*")]
            if any(n in measured for n in exact):
                continue  # its app is measured above
            if not exact:
                skipped.append(f"{entry.descriptor.app_id}: no exact bus name to wait for")
                continue
            commands = [c for c in presence.get("commands", []) if shutil.which(c)]
            proc = start([commands[0]], env, bus, exact) if commands else None
            if proc is None:
                skipped.append(
                    f"{entry.descriptor.app_id}: {'cannot be started here' if commands else 'not installed'}"
                )
                continue
            try:
                owned = next(n for n in exact if bus.has_owner(n))
                rows.append(await measure(entry.descriptor.app_id, owned, library))
                measured.add(owned)
            finally:
                stop(proc)
    return rows, skipped


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f} %" if whole else "    -"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="aai-gen-quality-") as tmp:
        rows, skipped = asyncio.run(bench(Path(tmp)))
    head = f"{'app':<34} {'bus name':<34} {'tools':>5}  {'without library':>15}  {'with library':>12}"
    print(f"{head}  {'from library':>12}")
    for row in rows:
        print(
            f"{row.app:<34} {row.bus_name:<34} {row.tools:>5}  {percent(row.without, row.tools):>15}  "
            f"{percent(row.with_library, row.tools):>12}  {row.from_library:>12}"
        )
    tools = sum(r.tools for r in rows)
    without = sum(r.without for r in rows)
    with_library = sum(r.with_library for r in rows)
    library = sum(r.from_library for r in rows)
    print(
        f"{'all':<34} {'':<34} {tools:>5}  {percent(without, tools):>15}  {percent(with_library, tools):>12}  "
        f"{library:>12}"
    )
    for line in skipped:
        print(f"not measured: {line}")


if __name__ == "__main__":
    main()
