"""`consent.default` and `consent.rules` in config.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aai_gateway.config import ConsentRule, load_settings
from aai_gateway.errors import ConfigError


def settings_with(tmp_path: Path, consent: object) -> Path:
    (tmp_path / ".aai").mkdir(exist_ok=True)
    path = tmp_path / ".aai" / "config.json"
    path.write_text(json.dumps({"consent": consent}), "utf-8")
    return path


def test_defaults_ask_with_no_rules(tmp_path: Path) -> None:
    settings = load_settings({"HOME": str(tmp_path)})
    assert (settings.consent_default, settings.consent_rules) == ("ask", ())


def test_rules_are_read_in_order(tmp_path: Path) -> None:
    rules = [
        {"caller": "Cursor", "app": "*", "tool": "delete_note", "decision": "deny"},
        {"app": "io.mpv", "decision": "allow"},
    ]
    settings_with(tmp_path, {"default": "deny", "rules": rules})
    settings = load_settings({"HOME": str(tmp_path)})
    assert settings.consent_default == "deny"
    assert settings.consent_rules == (
        ConsentRule(app="*", decision="deny", caller="Cursor", tool="delete_note"),
        ConsentRule(app="io.mpv", decision="allow"),
    )
    assert settings.sources["consent"].endswith("config.json")


@pytest.mark.parametrize(
    ("consent", "message"),
    [
        ({"default": "maybe"}, "key 'consent/default'"),
        ({"rules": [{"app": "io.mpv"}]}, "key 'consent/rules/0'"),
        ({"rules": [{"app": "io.mpv", "decision": "allow", "when": "always"}]}, "key 'consent/rules/0'"),
        ({"rules": [{"app": "", "decision": "allow"}]}, "key 'consent/rules/0/app'"),
        ({"rules": {"app": "io.mpv"}}, "key 'consent/rules'"),
        ({"always": True}, "key 'consent'"),
    ],
)
def test_a_bad_consent_setting_names_its_key(tmp_path: Path, consent: object, message: str) -> None:
    settings_with(tmp_path, consent)
    with pytest.raises(ConfigError, match=message):
        load_settings({"HOME": str(tmp_path)})
