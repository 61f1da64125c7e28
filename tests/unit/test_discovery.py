from __future__ import annotations

import json
import subprocess
from pathlib import Path

from aai_gateway.config import load_settings
from aai_gateway.discovery import scan
from tests.support import ROOT, TEST_APPS, gateway_command, install_descriptor

SEEDS = ROOT / "tests" / "golden" / "seeds"


def make_home(tmp_path: Path) -> Path:
    aai = tmp_path / ".aai"
    install_descriptor(aai, TEST_APPS / "dev.aai.echo" / "aai.json")
    install_descriptor(aai, TEST_APPS / "io.mpv" / "aai.json")
    mail = aai / "com.apple.mail"
    mail.mkdir()
    (mail / "aai.json").write_text((SEEDS / "seed003-mail-multi.json").read_text())
    reminders = aai / "com.example.reminders"
    reminders.mkdir()
    (reminders / "aai.json").write_text((SEEDS / "seed001-desktop-reminders-completed.json").read_text())
    broken = aai / "org.example.broken"
    broken.mkdir()
    (broken / "aai.json").write_text('{"schema_version": "1.0", "appId": "org.example.broken", "platforms": {}}')
    (aai / "not-an-app").mkdir()
    (aai / "config.json").write_text("{}")
    copy = aai / "org.example.copy"
    copy.mkdir()
    (copy / "aai.json").write_text((TEST_APPS / "dev.aai.echo" / "aai.json").read_text())
    return tmp_path


def test_scan_keeps_good_apps_and_reports_every_problem(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    result = scan(load_settings({"HOME": str(home), "AAI_PLATFORM": "linux"}))
    assert list(result.apps) == ["com.apple.mail", "com.example.reminders", "dev.aai.echo", "io.mpv"]
    messages = [str(p) for p in result.problems]
    assert any("org.example.broken/aai.json: missing required field 'name'" in m for m in messages)
    assert any("org.example.broken/aai.json#/platforms: must not be empty" in m for m in messages)
    assert any(
        "org.example.copy/aai.json#/appId: declares app id 'dev.aai.echo' but its folder is 'org.example.copy'" in m
        for m in messages
    )
    assert any(
        "com.example.reminders/aai.json: warning: has no binding for linux or web (it has macos)" in m for m in messages
    )


def test_multi_platform_apps_follow_the_platform_override(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    on_mac = scan(load_settings({"HOME": str(home), "AAI_PLATFORM": "macos"}))
    mail = on_mac.apps["com.apple.mail"]
    assert [b.platform for b in mail.served("macos")] == ["macos"]
    assert [b.platform for b in mail.served("linux")] == ["linux"]
    assert on_mac.apps["com.example.reminders"].served("macos")
    assert not on_mac.apps["dev.aai.echo"].served("macos")


def test_macos_bundles_are_scanned_on_macos(tmp_path: Path) -> None:
    resources = tmp_path / "Applications" / "Mail.app" / "Contents" / "Resources"
    resources.mkdir(parents=True)
    (resources / "aai.json").write_text((SEEDS / "seed003-mail-multi.json").read_text())
    env = {"HOME": str(tmp_path)}
    assert "com.apple.mail" in scan(load_settings({**env, "AAI_PLATFORM": "macos"})).apps
    assert "com.apple.mail" not in scan(load_settings({**env, "AAI_PLATFORM": "linux"})).apps


def test_missing_configured_scan_path_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    config = tmp_path / ".aai" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"scanPaths": ["~/nowhere", "~/.aai"]}))
    result = scan(load_settings({"HOME": str(tmp_path)}))
    assert [str(p) for p in result.problems] == [f"{tmp_path / 'nowhere'}: warning: scan path does not exist"]


def test_scan_command_lists_apps_then_problems_and_exits_zero(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    done = subprocess.run(
        [gateway_command(), "--scan"],
        capture_output=True,
        text=True,
        env={"HOME": str(home), "AAI_PLATFORM": "linux"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Apps (3):" in out
    assert "  dev.aai.echo  Echo | 回声  [linux (dbus)]  17 tools" in out
    assert "  io.mpv  mpv | mpv 播放器  [linux (dbus)]  13 tools" in out
    assert "  com.apple.mail  Mail  [linux (dbus)]  1 tool\n" in out
    assert "com.example.reminders  " not in out
    assert out.index("Apps (3):") < out.index("Problems (")
    assert "org.example.broken/aai.json: missing required field 'name'" in out


def test_bad_config_stops_the_command_with_the_key_named(tmp_path: Path) -> None:
    config = tmp_path / ".aai" / "config.json"
    config.parent.mkdir()
    config.write_text('{"httpPort": "eighty"}')
    done = subprocess.run(
        [gateway_command(), "--scan"], capture_output=True, text=True, env={"HOME": str(tmp_path)}, check=False
    )
    assert done.returncode == 2
    assert "key 'httpPort': must be an integer" in done.stderr
