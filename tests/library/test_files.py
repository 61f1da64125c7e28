"""File manager and document viewer entries against Thunar and Evince, on one private bus and one Xvfb display.

Effects are checked on the apps themselves: the files Thunar copied, moved and linked, and the windows both apps
opened, by their titles (`xwininfo` on the private display).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.mcp_client import stdio_session
from tests.e2e.test_dunst import free_display
from tests.library.apps import desktop_env, started
from tests.library.library_gateway import Exec, gateway_env, read_only_tools
from tests.support import Bus, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

FILEMANAGER1 = "org.freedesktop.filemanager1"
THUNAR = "org.xfce.thunar"
EVINCE = "org.gnome.evince"


@pytest.fixture(scope="module")
def display(workdir: Path) -> Iterator[str]:
    with free_display(workdir) as name:
        yield name


@pytest.fixture(scope="module")
def thunar(library_bus: Bus, display: str, workdir: Path) -> Iterator[None]:
    env = desktop_env(library_bus, workdir / "thunar-home", display)
    names = ["org.xfce.FileManager", "org.freedesktop.FileManager1"]
    with started(["thunar", "--daemon"], env, workdir / "thunar.log", library_bus, names):
        yield


@pytest.fixture(scope="module")
def evince(library_bus: Bus, display: str, workdir: Path) -> Iterator[None]:
    env = desktop_env(library_bus, workdir / "evince-home", display)
    daemon = "/usr/libexec/evinced"
    with started([daemon], env, workdir / "evinced.log", library_bus, ["org.gnome.evince.Daemon"]):
        yield


def titles(display: str) -> list[str]:
    """The titles of the windows on `display`."""
    tree = subprocess.run(
        ["xwininfo", "-root", "-tree", "-display", display], capture_output=True, text=True, check=True, timeout=10
    ).stdout
    return re.findall(r'^\s+0x[0-9a-f]+ "(.*)": \(', tree, re.MULTILINE)


def window(display: str, title: str) -> None:
    wait_until(lambda: title in titles(display), 15, f"a window titled {title!r}")


def tree(root: Path, *folders: str) -> list[Path]:
    made = [root / name for name in folders]
    for folder in made:
        folder.mkdir(parents=True)
    return made


def pdf(path: Path, title: str, pages: int) -> Path:
    """A small valid PDF with `pages` pages of text and `title` in its metadata."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{3 + i * 2} 0 R" for i in range(pages))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>")
    font = 3 + pages * 2
    for i in range(pages):
        text = f"BT /F1 24 Tf 72 720 Td (Page {i + 1}) Tj ET"
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + i * 2} 0 R "
            f"/Resources << /Font << /F1 {font} 0 R >> >> >>"
        )
        objects.append(f"<< /Length {len(text)} >>\nstream\n{text}\nendstream")
    objects.append("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    objects.append(f"<< /Title ({title}) >>")
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info {len(objects)} 0 R >>\n".encode()
    out += f"startxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(out)
    return path


async def test_filemanager1_shows_folders_items_and_properties(
    library_bus: Bus, display: str, thunar: None, workdir: Path
) -> None:
    downloads, photos = tree(workdir / "fm1", "Downloads", "Photos")
    report = downloads / "report.txt"
    report.write_text("numbers\n")
    env = gateway_env(library_bus, workdir / "fm1-home", FILEMANAGER1)
    async with stdio_session(env, workdir / "fm1-stderr.log") as session:
        run = Exec(session, FILEMANAGER1)
        assert await run.tools() == ["show_folders", "show_items", "show_item_properties"]
        assert await run("show_folders", uris=[photos.as_uri()]) is None
        window(display, "Photos - Thunar")
        await run("show_items", uris=[report.as_uri()])
        window(display, "Downloads - Thunar")
        await run("show_item_properties", uris=[report.as_uri()])
        window(display, "report.txt - Properties")
        assert read_only_tools(FILEMANAGER1) == []


async def test_thunar_copies_moves_links_and_opens_dialogs(
    library_bus: Bus, display: str, thunar: None, workdir: Path
) -> None:
    music, backup, archive, albums = tree(workdir / "thunar", "Music", "Backup", "Archive", "Albums")
    songs = [music / "one.ogg", music / "two.ogg"]
    for song in songs:
        song.write_bytes(b"OggS" + song.name.encode())
    env = gateway_env(library_bus, workdir / "thunar-gateway-home", THUNAR)
    async with stdio_session(env, workdir / "thunar-stderr.log") as session:
        run = Exec(session, THUNAR)
        await run("copy_into", sources=[str(s) for s in songs], folder=str(backup))
        wait_until(lambda: sorted(p.name for p in backup.iterdir()) == ["one.ogg", "two.ogg"], 15, "the copies")
        assert (backup / "two.ogg").read_bytes() == songs[1].read_bytes()
        assert all(s.exists() for s in songs)

        await run("copy_to", sources=[str(songs[0])], targets=[str(music / "one (copy).ogg")])
        wait_until((music / "one (copy).ogg").exists, 15, "the copy under a new name")
        await run("link_into", sources=[str(songs[0])], folder=str(albums))
        wait_until((albums / "one.ogg").is_symlink, 15, "the link")
        assert (albums / "one.ogg").resolve() == songs[0]
        await run("move_into", sources=[str(songs[1])], folder=str(archive))
        wait_until(lambda: (archive / "two.ogg").exists() and not songs[1].exists(), 15, "the move")

        await run("open_folder", folder=str(backup))
        window(display, "Backup - Thunar")
        await run("show_file_in_folder", folder=str(archive), filename="two.ogg")
        window(display, "Archive - Thunar")
        await run("open", path=albums.as_uri())
        window(display, "Albums - Thunar")
        await run("show_properties", path=str(songs[0]))
        window(display, "one.ogg - Properties")
        await run("bulk_rename", folder=str(backup), files=["one.ogg", "two.ogg"])
        window(display, "Rename Multiple Files")
        await run("preferences")
        window(display, "File Manager Preferences")
        assert read_only_tools(THUNAR) == []


async def test_evince_opens_and_finds_a_document(library_bus: Bus, display: str, evince: None, workdir: Path) -> None:
    document = pdf(workdir / "report.pdf", "Quarterly report", 3)
    env = gateway_env(library_bus, workdir / "evince-gateway-home", EVINCE)
    async with stdio_session(env, workdir / "evince-stderr.log") as session:
        run = Exec(session, EVINCE)
        assert read_only_tools(EVINCE) == ["find_document"]
        assert await run("find_document", uri=document.as_uri()) == ""
        viewer = await run("open_document", uri=document.as_uri())
        assert viewer.startswith(":")
        window(display, "report.pdf — Quarterly report")
        assert library_bus.has_owner(viewer)
        assert await run("find_document", uri=document.as_uri()) == viewer
        assert await run("open_document", uri=document.as_uri()) == viewer  # the same window, not a second one
        assert titles(display).count("report.pdf — Quarterly report") == 1
