"""`aai-gateway --generate` from a macOS scripting definition and `--discover` of scriptable apps and COM
servers, through the installed command: an sdef file, a fake app bundle under `$HOME/Applications`,
`validate`, the installed descriptor seen by `apps` and `--discover`, and the refusals."""

from __future__ import annotations

import json
import os
import plistlib
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support import ROOT, gateway_command

pytestmark = pytest.mark.e2e

SDEFS = ROOT / "tests" / "sdef"
JOTTER = SDEFS / "jotter.sdef"


def gateway(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([gateway_command(), *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def home_env(home: Path, platform: str = "linux") -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AAI_")}
    return {**env, "HOME": str(home), "AAI_PLATFORM": platform}


def fake_app(home: Path, name: str = "Jotter", **info: Any) -> Path:
    """$HOME/Applications/<name>.app with a binary Info.plist and, when it names one, the Jotter sdef."""
    app = home / "Applications" / f"{name}.app"
    resources = app / "Contents" / "Resources"
    resources.mkdir(parents=True)
    (app / "Contents" / "Info.plist").write_bytes(plistlib.dumps(info, fmt=plistlib.FMT_BINARY))
    if "OSAScriptingDefinition" in info:
        shutil.copyfile(JOTTER, resources / info["OSAScriptingDefinition"])
    return app


def jotter_app(home: Path) -> Path:
    return fake_app(home, CFBundleIdentifier="com.example.Jotter", CFBundleName="Jotter",
                    NSAppleScriptEnabled=True, OSAScriptingDefinition="Jotter.sdef")  # fmt: skip


def tools(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in doc["platforms"]["macos"]["tools"]}


def test_generate_from_an_sdef_file_then_validate(tmp_path: Path) -> None:
    env = home_env(tmp_path / "home")
    out = tmp_path / "out" / "aai.json"
    generated = gateway(env, "--generate", str(JOTTER), "--out", str(out))
    assert generated.returncode == 0, generated.stderr
    assert generated.stdout == ""
    assert generated.stderr.splitlines() == [
        f"note: {JOTTER} includes file:///System/Library/ScriptingDefinitions/CocoaStandard.sdef, "
        "which is not followed: what it defines is left out",
        "note: 'new item' (Jotter Suite) is left out: its parameter 'new' is a type (a class name), "
        "which cannot be passed as data",
        "note: 'configure' (Jotter Suite) is left out: its direct parameter is a record, "
        "which AppleScript cannot build from data",
        "note: no bundle id is known: the scripts address the app by its name 'Jotter' (--app-id sets one)",
        "note: hidden commands are left out: dump state, reset caches",
        "descriptions: 0 from the library, 9 from the interface, 0 mechanical",
        f"wrote {out}: local.jotter, 9 tools from {JOTTER}",
    ]
    validated = gateway(env, "validate", str(out))
    assert validated.returncode == 0, validated.stdout
    assert f"ok  {out}: local.jotter (multi, macos; 9 tools)" in validated.stdout
    doc = json.loads(out.read_text())
    assert tools(doc)["search"]["script"] == 'tell application "Jotter"\n\tsearch "${target}"\nend tell\n'


def test_generate_from_an_app_bundle_and_serve_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    app = jotter_app(home)
    env = home_env(home, "macos")
    printed = gateway(env, "--generate", str(app))
    assert printed.returncode == 0, printed.stderr
    doc = json.loads(printed.stdout)
    sdef = app / "Contents" / "Resources" / "Jotter.sdef"
    assert printed.stderr.splitlines()[-1] == f"generated: com.example.jotter, 9 tools from {sdef}"
    assert doc["appId"] == "com.example.jotter"
    assert doc["name"] == "Jotter"
    assert doc["platforms"]["macos"]["bundle_id"] == "com.example.Jotter"
    assert all(t["script"].startswith('tell application id "com.example.Jotter"\n') for t in tools(doc).values())
    inner = gateway(env, "--generate", str(sdef), "--app-id", "dev.aai.jotter")
    assert inner.returncode == 0, inner.stderr
    assert json.loads(inner.stdout)["platforms"]["macos"]["bundle_id"] == "com.example.Jotter"

    target = home / ".aai" / "com.example.jotter" / "aai.json"
    target.parent.mkdir(parents=True)
    target.write_text(printed.stdout)
    listed = gateway(env, "apps")
    assert listed.returncode == 0, listed.stderr
    assert "com.example.jotter  Jotter  [macos (applescript)]  9 tools" in listed.stdout


def test_discover_finds_scriptable_apps_under_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    app = jotter_app(home)
    fake_app(home, "Quiet", CFBundleIdentifier="com.example.quiet")
    flagged = fake_app(home, "Flagged", CFBundleIdentifier="org.example.flagged", NSAppleScriptEnabled="YES")
    env = home_env(home, "macos")
    listed = gateway(env, "--discover", "--json")
    assert listed.returncode == 0, listed.stderr
    found = {a["path"]: a for a in json.loads(listed.stdout) if a["path"].startswith(str(home))}
    assert found == {
        str(flagged): {"bundleId": "org.example.flagged", "name": "Flagged", "path": str(flagged), "sdef": None,
                       "bundledDescriptor": False, "describedBy": []},
        str(app): {"bundleId": "com.example.Jotter", "name": "Jotter", "path": str(app),
                   "sdef": str(app / "Contents" / "Resources" / "Jotter.sdef"), "bundledDescriptor": False,
                   "describedBy": []},
    }  # fmt: skip

    generated = gateway(env, "--generate", str(app), "--out", str(home / ".aai" / "com.example.jotter" / "aai.json"))
    assert generated.returncode == 0, generated.stderr
    again = gateway(env, "--discover", "--json")
    mine = [a for a in json.loads(again.stdout) if a["path"] == str(app)]
    assert mine[0]["describedBy"] == ["com.example.jotter"]
    text = gateway(env, "--platform", "macos", "--discover")
    assert text.returncode == 0, text.stderr
    assert f"\nJotter  com.example.Jotter  [described by com.example.jotter]\n  {app}\n" in text.stdout
    assert f"(in /Applications, /System/Applications, {home / 'Applications'})" in text.stdout.splitlines()[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([str(SDEFS / "malformed.sdef")], f"{SDEFS / 'malformed.sdef'}: 7:4: not well-formed XML (mismatched tag)"),
        ([str(SDEFS / "entities.sdef")],
         f"{SDEFS / 'entities.sdef'}: 4:16: declares an XML entity, which an sdef may not do"),
        ([str(JOTTER), "--format", "c"],
         "an sdef gives AppleScript templates, which only the multi-platform shape can hold; "
         "leave out --format c (or use --format a)"),
        ([str(JOTTER), "--app-id", "Jotter"],
         "app id 'Jotter' is not a lowercase reverse-DNS id such as com.example.mail"),
        (["/nowhere/missing.sdef"], "cannot read /nowhere/missing.sdef: No such file or directory"),
    ],
)  # fmt: skip
def test_bad_sources_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    result = gateway(home_env(tmp_path), "--generate", *args)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", f"aai-gateway: {message}\n")


def test_apps_that_are_not_scriptable_are_refused(tmp_path: Path) -> None:
    quiet = fake_app(tmp_path, "Quiet", CFBundleIdentifier="com.example.quiet")
    result = gateway(home_env(tmp_path), "--generate", str(quiet))
    assert result.returncode == 1
    assert result.stderr.startswith(f"aai-gateway: {quiet} is not scriptable: its Info.plist sets neither")
    empty = tmp_path / "Empty.app"
    empty.mkdir()
    result = gateway(home_env(tmp_path), "--generate", str(empty))
    assert result.stderr == f"aai-gateway: {empty} is not an app bundle: it has no Contents/Info.plist\n"


def test_windows_discovery_needs_the_windows_registry(tmp_path: Path) -> None:
    for args in (["--discover"], ["--discover", "--json"], ["--platform", "windows", "--discover"]):
        result = gateway(home_env(tmp_path, "windows"), *args)
        assert (result.returncode, result.stdout) == (1, "")
        assert result.stderr == (
            "aai-gateway: --discover on windows: COM servers are listed from the Windows registry (winreg), "
            "which this system does not have; run it on Windows\n"
        )
