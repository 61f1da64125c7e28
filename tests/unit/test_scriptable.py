"""Scriptable macOS apps found in a temporary tree of app bundles (XML and binary Info.plists), and the
scripting definition of one bundle."""

from __future__ import annotations

import plistlib
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from aai_gateway.authoring import scriptable
from aai_gateway.descriptor import Descriptor
from aai_gateway.descriptor.validate import check_document
from tests.support import ROOT

JOTTER_SDEF = ROOT / "tests" / "sdef" / "jotter.sdef"


def make_app(
    folder: Path,
    name: str,
    info: dict[str, Any] | bytes | None,
    *,
    fmt: plistlib.PlistFormat = plistlib.FMT_XML,
    sdefs: tuple[str, ...] = (),
) -> Path:
    app = folder / f"{name}.app"
    resources = app / "Contents" / "Resources"
    resources.mkdir(parents=True)
    if isinstance(info, bytes):
        (app / "Contents" / "Info.plist").write_bytes(info)
    elif info is not None:
        (app / "Contents" / "Info.plist").write_bytes(plistlib.dumps(info, fmt=fmt))
    for sdef in sdefs:
        shutil.copyfile(JOTTER_SDEF, resources / sdef)
    return app


def descriptor(doc: dict[str, Any]) -> Descriptor:
    loaded = check_document(doc, "test")
    assert loaded.descriptor is not None, loaded.problems
    return loaded.descriptor


def macos_app(app_id: str, bundle_id: str | None = None) -> Descriptor:
    section: dict[str, Any] = {"automation": "applescript", "tools": []}
    if bundle_id:
        section["bundle_id"] = bundle_id
    return descriptor({"schema_version": "1.0", "appId": app_id, "name": "X", "description": "x",
                       "platforms": {"macos": section}})  # fmt: skip


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    system, user = tmp_path / "System", tmp_path / "home" / "Applications"
    system.mkdir()
    user.mkdir(parents=True)
    make_app(system, "Jotter", {"CFBundleIdentifier": "com.example.Jotter", "CFBundleName": "Jotter",
             "NSAppleScriptEnabled": True, "OSAScriptingDefinition": "Jotter.sdef"},
             sdefs=("Jotter.sdef", "Other.sdef"))  # fmt: skip
    make_app(system / "Utilities", "Plain", {"CFBundleIdentifier": "com.example.plain"}, fmt=plistlib.FMT_BINARY,
             sdefs=("plain.sdef",))  # fmt: skip
    make_app(system, "Silent", {"CFBundleIdentifier": "com.example.silent", "NSAppleScriptEnabled": False})
    make_app(system / "Utilities" / "Deeper", "TooDeep", {"NSAppleScriptEnabled": True})
    make_app(system, ".Hidden", {"NSAppleScriptEnabled": True})
    make_app(user, "Flagged", {"CFBundleIdentifier": "org.example.flagged", "CFBundleDisplayName": "Flagged Pro",
             "NSAppleScriptEnabled": "YES"})  # fmt: skip
    make_app(user, "Broken", b"<?xml version='1.0'?><plist><dict><key>x</dict></plist>")
    make_app(user, "Bare", None)
    bundled = make_app(
        user, "Carries", {"CFBundleIdentifier": "dev.example.carries", "OSAScriptingDefinition": "C.sdef"}
    )
    (bundled / "Contents" / "Resources" / "aai.json").write_text("{}")
    (user / "notes.txt").write_text("not an app")
    return system, user


def test_find_apps_lists_scriptable_bundles_with_their_sdef(tree: tuple[Path, Path], tmp_path: Path) -> None:
    system, user = tree
    apps, problems = scriptable.find_apps([system, user, tmp_path / "missing"])
    assert [(a.name, a.bundle_id, a.path) for a in apps] == [
        ("Carries", "dev.example.carries", user / "Carries.app"),
        ("Flagged Pro", "org.example.flagged", user / "Flagged.app"),
        ("Jotter", "com.example.Jotter", system / "Jotter.app"),
        ("Plain", "com.example.plain", system / "Utilities" / "Plain.app"),
    ]
    by_name = {a.name: a for a in apps}
    assert by_name["Jotter"].sdef == system / "Jotter.app" / "Contents" / "Resources" / "Jotter.sdef"
    assert by_name["Plain"].sdef == system / "Utilities" / "Plain.app" / "Contents" / "Resources" / "plain.sdef"
    assert by_name["Flagged Pro"].sdef is None
    assert by_name["Carries"].sdef is None  # it names C.sdef, which is not there
    assert by_name["Carries"].bundled_descriptor is True
    assert by_name["Jotter"].bundled_descriptor is False
    assert problems[0].startswith(f"{user / 'Bare.app'} is not an app bundle: it has no Contents/Info.plist")
    assert problems[1].startswith(f"{user / 'Broken.app' / 'Contents' / 'Info.plist'}: is not a property list: ")
    assert len(problems) == 2


def test_installed_descriptors_are_matched_by_bundle_id(tree: tuple[Path, Path]) -> None:
    system, user = tree
    installed = [
        macos_app("com.example.jotter"),
        macos_app("dev.aai.my-jotter", bundle_id="COM.EXAMPLE.JOTTER"),
        macos_app("org.example.other", bundle_id="org.example.other"),
        descriptor({"schema_version": "1.0", "appId": "org.example.flagged", "name": "F", "description": "f",
                    "platforms": {"linux": {"automation": "dbus", "service": "org.example.Flagged", "object": "/",
                                            "interface": "org.example.Flagged", "tools": []}}}),
    ]  # fmt: skip
    apps, _ = scriptable.find_apps([system, user], installed)
    described = {a.name: a.described_by for a in apps}
    assert described == {
        "Carries": (),
        "Flagged Pro": (),
        "Jotter": ("com.example.jotter", "dev.aai.my-jotter"),
        "Plain": (),
    }
    jotter = next(a for a in apps if a.name == "Jotter")
    assert jotter.to_json() == {
        "bundleId": "com.example.Jotter",
        "name": "Jotter",
        "path": str(system / "Jotter.app"),
        "sdef": str(system / "Jotter.app" / "Contents" / "Resources" / "Jotter.sdef"),
        "bundledDescriptor": False,
        "describedBy": ["com.example.jotter", "dev.aai.my-jotter"],
    }


def test_report_reads_like_the_linux_one(tree: tuple[Path, Path]) -> None:
    system, user = tree
    apps, problems = scriptable.find_apps([system, user], [macos_app("com.example.jotter")])
    lines = scriptable.report(apps, [system, user], problems)
    assert lines[0] == f"Scriptable macOS apps: 4 (in {system}, {user})"
    text = "\n".join(lines)
    assert f"\nJotter  com.example.Jotter  [described by com.example.jotter]\n  {system / 'Jotter.app'}\n" in text
    assert f"\nCarries  dev.example.carries  [aai.json in the bundle]\n  {user / 'Carries.app'}\n" in text
    assert "  sdef: none in the bundle (on a Mac, `sdef APP` prints it)" in text
    assert "\nUnreadable bundles (2):\n" in text
    assert lines[-1].startswith("Write a descriptor with: aai-gateway --generate /Applications/X.app")


def test_roots_follow_home(tmp_path: Path) -> None:
    assert scriptable.roots(tmp_path) == (
        Path("/Applications"),
        Path("/System/Applications"),
        tmp_path / "Applications",
    )


def test_definition_of_a_bundle_and_of_an_sdef_inside_one(tree: tuple[Path, Path]) -> None:
    system, _ = tree
    app = system / "Jotter.app"
    found = scriptable.definition(app)
    assert found.data == JOTTER_SDEF.read_bytes()
    assert (found.source, found.bundle_id, found.name) == (
        str(app / "Contents" / "Resources" / "Jotter.sdef"), "com.example.Jotter", "Jotter")  # fmt: skip
    inner = scriptable.definition(app / "Contents" / "Resources" / "Other.sdef")
    assert (inner.bundle_id, inner.name) == ("com.example.Jotter", "Jotter")
    loose = scriptable.definition(JOTTER_SDEF)
    assert (loose.source, loose.bundle_id, loose.name) == (str(JOTTER_SDEF), None, None)


def test_definition_refusals(tree: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    system, user = tree
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    with pytest.raises(ValueError, match=r"Silent\.app is not scriptable: its Info\.plist sets neither"):
        scriptable.definition(system / "Silent.app")
    with pytest.raises(ValueError, match=r"Flagged\.app is scriptable but keeps its dictionary outside an \.sdef file"):
        scriptable.definition(user / "Flagged.app")
    with pytest.raises(ValueError, match=r"cannot read .*nothing\.sdef: No such file or directory"):
        scriptable.definition(tmp_path / "nothing.sdef")


def test_an_sdef_named_outside_the_bundle_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "secret.sdef").write_text("<dictionary/>")
    app = make_app(tmp_path / "Apps", "Sly", {"OSAScriptingDefinition": "../../../../secret.sdef"})
    bundle = scriptable.read_bundle(app)
    assert bundle.sdef is None
    assert bundle.scriptable is True


@pytest.mark.skipif(sys.platform == "win32", reason="the stand-in sdef command is a shell script")
def test_the_sdef_command_prints_what_the_bundle_does_not_hold(tree: tuple[Path, Path], tmp_path: Path) -> None:
    _, user = tree
    tool = tmp_path / "bin" / "sdef"
    tool.parent.mkdir()
    cat = shutil.which("cat")
    tool.write_text(f"#!/bin/sh\n[ \"$1\" = '{user / 'Flagged.app'}' ] && exec {cat} '{JOTTER_SDEF}'\nexit 3\n")
    tool.chmod(0o755)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", str(tool.parent))
        found = scriptable.definition(user / "Flagged.app")
        assert (found.data, found.source, found.bundle_id) == (
            JOTTER_SDEF.read_bytes(), f"sdef {user / 'Flagged.app'}", "org.example.flagged")  # fmt: skip
        tool.write_text("#!/bin/sh\necho 'no dictionary here' >&2\nexit 1\n")
        with pytest.raises(ValueError, match="printed no dictionary: no dictionary here"):
            scriptable.definition(user / "Flagged.app")


def test_large_plists_are_refused(tmp_path: Path) -> None:
    app = make_app(tmp_path, "Huge", b" " * (scriptable.MAX_PLIST_BYTES + 1))
    with pytest.raises(ValueError, match=f"is larger than {scriptable.MAX_PLIST_BYTES} bytes"):
        scriptable.read_bundle(app)
