"""Where each setting came from, per config.json key as the schema spells it."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

from aai_gateway.config import Settings, config_value, known_keys, load_settings, setting_fields, source_text


def test_every_config_key_with_one_value_names_a_settings_field() -> None:
    names = {f.name for f in fields(Settings)}
    table = setting_fields()
    assert set(table) | {"web", "consent", "llm", "search", "telemetry", "apps"} == set(known_keys())
    assert {key: name for key, name in table.items() if name not in names} == {}
    assert table["enableWebUI"] == "enable_web_ui"
    assert table["web.allowHttpLoopback"] == "web_allow_http_loopback"


def test_a_nested_key_comes_from_the_file_only_when_the_file_sets_it(tmp_path: Path) -> None:
    config = tmp_path / ".aai" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"consent": {"rules": []}, "web": {"timeout": 5}}))
    settings = load_settings({"HOME": str(tmp_path)})
    assert settings.sources["consent.rules"] == settings.sources["web.timeout"] == str(config)
    assert "consent.default" not in settings.sources
    assert "web.cacheTtlHours" not in settings.sources
    assert source_text(settings.sources.get("consent.default")) == "default"
    assert source_text(settings.sources["consent.rules"]) == f"config file {config}"


def test_environment_and_command_line_sources(tmp_path: Path) -> None:
    home = tmp_path / "elsewhere"
    settings = load_settings({"HOME": str(tmp_path), "AAI_HOME": str(home), "AAI_PLATFORM": "windows"})
    assert source_text(settings.sources["aai_home"]) == "environment variable AAI_HOME"
    assert source_text(settings.sources["platform"]) == "environment variable AAI_PLATFORM"
    changed = settings.from_option("--port", http_port=8123).from_option("--log-level", log_level="debug")
    assert (changed.http_port, changed.log_level) == (8123, "debug")
    assert source_text(changed.sources["httpPort"]) == "command-line option --port"
    assert source_text(changed.sources["logLevel"]) == "command-line option --log-level"
    assert "httpPort" not in settings.sources


def test_values_are_shown_as_config_json_holds_them(tmp_path: Path) -> None:
    config = tmp_path / ".aai" / "config.json"
    config.parent.mkdir()
    rules = [{"caller": "Cursor", "app": "io.mpv", "decision": "deny"}, {"app": "*", "tool": "x", "decision": "allow"}]
    config.write_text(json.dumps({"consent": {"rules": rules}, "scanPaths": ["/opt/aai"]}))
    settings = load_settings({"HOME": str(tmp_path)})
    assert config_value(settings.consent_rules) == rules
    assert config_value(settings.scan_paths) == ["/opt/aai"]
    assert config_value(settings.default_timeout) == 30
    assert config_value(settings.web_cache_ttl_hours) == 24
    assert config_value(settings.enable_web_ui) is True
