"""Notes: a tiny note-taking app that is driven entirely over DBus.

It is the example app for the AAI gateway: the ``aai.json`` next to this file
describes its methods, so an AI agent can add, list, read and delete notes
through the gateway.

The app owns the bus name ``dev.aai.Notes`` on the session bus and exports the
object ``/dev/aai/Notes`` with the interface ``dev.aai.Notes``:

    AddNote(s title, s body, as tags) -> s   id of the new note ("n1", "n2", ...)
    ListNotes(s tag) -> s                    JSON array of notes; "" lists all
    GetNote(s id) -> s                       JSON object {id, title, body, tags}
    DeleteNote(s id) -> b                    true if the note existed
    Count() -> u                             number of notes

Notes are kept in memory and saved after every change to a JSON file, by
default ``$XDG_DATA_HOME/aai-notes/notes.json`` (``~/.local/share/...`` when
XDG_DATA_HOME is unset).

Run it with::

    python notes_service.py [--store PATH]

It prints ``ready`` once the bus name is owned and exits cleanly on Ctrl-C or
SIGTERM. Try it with busctl::

    busctl --user call dev.aai.Notes /dev/aai/Notes dev.aai.Notes AddNote ssas "Milk" "2 litres" 1 shopping
    busctl --user call dev.aai.Notes /dev/aai/Notes dev.aai.Notes ListNotes s ""
"""

# DBus member names are CamelCase by convention.
# ruff: noqa: N802

import argparse
import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Annotated, TypedDict

from dbus_fast import BusType, DBusError, NameFlag, RequestNameReply
from dbus_fast.aio import MessageBus
from dbus_fast.annotations import DBusBool, DBusSignature, DBusStr, DBusUInt32
from dbus_fast.service import ServiceInterface, dbus_method

BUS_NAME = "dev.aai.Notes"
OBJECT_PATH = "/dev/aai/Notes"
INTERFACE = "dev.aai.Notes"
NOT_FOUND = "dev.aai.Notes.Error.NotFound"

DBusStrArray = Annotated[list[str], DBusSignature("as")]


class Note(TypedDict):
    id: str
    title: str
    body: str
    tags: list[str]


def default_store() -> Path:
    """Where notes are saved when ``--store`` is not given."""
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "aai-notes" / "notes.json"


class NotesInterface(ServiceInterface):
    """The ``dev.aai.Notes`` interface, backed by a JSON file."""

    def __init__(self, store: Path) -> None:
        super().__init__(INTERFACE)
        self._store = store
        self._notes: dict[str, Note] = {}
        self._next_id = 1
        if store.exists():
            for note in json.loads(store.read_text(encoding="utf-8")):
                self._notes[note["id"]] = note
                self._next_id = max(self._next_id, int(note["id"].lstrip("n")) + 1)

    def _save(self) -> None:
        self._store.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._store.with_suffix(".tmp")
        tmp.write_text(json.dumps(list(self._notes.values()), ensure_ascii=False, indent=2), encoding="utf-8")
        tmp.replace(self._store)

    @dbus_method()
    def AddNote(self, title: DBusStr, body: DBusStr, tags: DBusStrArray) -> DBusStr:
        note_id = f"n{self._next_id}"
        self._next_id += 1
        self._notes[note_id] = Note(id=note_id, title=title, body=body, tags=list(tags))
        self._save()
        return note_id

    @dbus_method()
    def ListNotes(self, tag: DBusStr) -> DBusStr:
        notes = [note for note in self._notes.values() if not tag or tag in note["tags"]]
        return json.dumps(notes, ensure_ascii=False)

    @dbus_method()
    def GetNote(self, note_id: DBusStr) -> DBusStr:
        note = self._notes.get(note_id)
        if note is None:
            raise DBusError(NOT_FOUND, f"no note with id {note_id!r}")
        return json.dumps(note, ensure_ascii=False)

    @dbus_method()
    def DeleteNote(self, note_id: DBusStr) -> DBusBool:
        if self._notes.pop(note_id, None) is None:
            return False
        self._save()
        return True

    @dbus_method()
    def Count(self) -> DBusUInt32:
        return len(self._notes)


async def serve(store: Path) -> int:
    """Own the bus name, announce readiness, and serve until SIGTERM or SIGINT."""
    bus = await MessageBus(bus_type=BusType.SESSION).connect()
    bus.export(OBJECT_PATH, NotesInterface(store))
    reply = await bus.request_name(BUS_NAME, NameFlag.DO_NOT_QUEUE)
    if reply is not RequestNameReply.PRIMARY_OWNER:
        print(f"could not own {BUS_NAME}: {reply.name}", file=sys.stderr)
        bus.disconnect()
        return 1

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    print("ready", flush=True)
    await stop.wait()
    bus.disconnect()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A tiny notes app driven over DBus.")
    parser.add_argument(
        "--store", type=Path, default=None, help=f"JSON file to keep notes in (default: {default_store()})"
    )
    args = parser.parse_args(argv)
    return asyncio.run(serve(args.store or default_store()))


if __name__ == "__main__":
    sys.exit(main())
