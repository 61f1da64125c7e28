from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from aai_gateway.config import known_keys, load_settings
from aai_gateway.errors import ConfigError
from tests.support import ROOT


def write_config(home: Path, data: object) -> Path:
    path = home / ".aai" / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def test_missing_file_means_defaults(tmp_path: Path) -> None:
    settings = load_settings({"HOME": str(tmp_path)})
    assert settings.scan_paths == (tmp_path / ".aai",)
    assert (settings.default_timeout, settings.log_level, settings.enable_web_ui, settings.http_port) == (
        30.0,
        "info",
        True,
        3000,
    )
    assert settings.config_file is None
    assert settings.platform in {"linux", "macos", "windows"}


def test_values_are_read_and_tilde_follows_home(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        {
            "scanPaths": ["~/apps", "/opt/aai"],
            "defaultTimeout": 5,
            "logLevel": "debug",
            "enableWebUI": False,
            "httpPort": 8080,
            "platform": "macos",
        },
    )
    settings = load_settings({"HOME": str(tmp_path)})
    assert settings.scan_paths == (tmp_path / "apps", Path("/opt/aai"))
    assert (settings.default_timeout, settings.log_level, settings.enable_web_ui, settings.http_port) == (
        5.0,
        "debug",
        False,
        8080,
    )
    assert settings.platform == "macos"
    assert settings.sources["httpPort"] == str(path)


def test_aai_home_moves_the_root_and_aai_platform_overrides(tmp_path: Path) -> None:
    write_config(tmp_path / "elsewhere", {"platform": "macos"})
    settings = load_settings(
        {"HOME": str(tmp_path), "AAI_HOME": str(tmp_path / "elsewhere" / ".aai"), "AAI_PLATFORM": "windows"}
    )
    assert settings.scan_paths == (tmp_path / "elsewhere" / ".aai",)
    assert settings.platform == "windows"
    assert settings.sources["platform"] == "AAI_PLATFORM"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"scanPath": ["~"]}, "unknown key 'scanPath' (known keys: "),
        ({"httpPort": "3000"}, "key 'httpPort': must be an integer, got a string (\"3000\")"),
        ({"httpPort": 70000}, "key 'httpPort': must be at most 65535; got 70000"),
        ({"logLevel": "loud"}, 'key \'logLevel\': must be one of "debug", "info", "warning", "error"; got "loud"'),
        ({"scanPaths": "~/.aai"}, "key 'scanPaths': must be an array"),
        ({"scanPaths": [1]}, "key 'scanPaths/0': must be a string"),
        ({"defaultTimeout": 0}, "key 'defaultTimeout': must be more than 0"),
        ({"enableWebUI": "yes"}, "key 'enableWebUI': must be a boolean"),
        ({"platform": "beos"}, "key 'platform': must be one of"),
        ([], "must be a JSON object of settings"),
    ],
)
def test_bad_config_is_a_clear_error_naming_the_key(tmp_path: Path, data: object, message: str) -> None:
    path = write_config(tmp_path, data)
    with pytest.raises(ConfigError) as caught:
        load_settings({"HOME": str(tmp_path)})
    assert str(caught.value).startswith(str(path))
    assert message in str(caught.value)


def test_invalid_json_and_bad_environment(tmp_path: Path) -> None:
    path = tmp_path / ".aai" / "config.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"httpPort": 1,}')
    with pytest.raises(ConfigError, match=r"invalid JSON at line 1, column 16"):
        load_settings({"HOME": str(tmp_path)})
    path.unlink()
    with pytest.raises(ConfigError, match="AAI_PLATFORM: must be one of"):
        load_settings({"HOME": str(tmp_path), "AAI_PLATFORM": "beos"})


def test_every_config_key_is_documented_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    documented = set(re.findall(r"^\| `([A-Za-z.]+)` \|", readme, re.MULTILINE))
    assert set(known_keys()) <= documented, set(known_keys()) - documented


def test_web_and_per_app_settings_with_secrets_from_the_environment(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        {
            "web": {"allowHttpLoopback": True, "cacheTtlHours": 1},
            "apps": {"com.example.tasks": {"timeout": 5, "clientId": "cid", "clientSecret": {"$env": "TASKS_SECRET"}}},
        },
    )
    settings = load_settings({"HOME": str(tmp_path), "TASKS_SECRET": "s3cret"})
    assert settings.web_allow_http_loopback is True
    assert settings.web_cache_ttl_hours == 1.0
    assert settings.cache_dir == tmp_path / ".cache" / "aai-gateway"
    app = settings.apps["com.example.tasks"]
    assert (app.timeout, app.client_id) == (5.0, "cid")
    assert app.client_secret is not None
    assert app.client_secret.reveal() == "s3cret"
    assert "s3cret" not in repr(settings)
    with pytest.raises(ConfigError, match="TASKS_SECRET is not set"):
        load_settings({"HOME": str(tmp_path)})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"web": {"allowHttpLoopbak": True}}, "key 'web': unknown field 'allowHttpLoopbak'"),
        ({"apps": {"x.y": {"clientSecret": "plain"}}}, "key 'apps/x.y/clientSecret'"),
    ],
)
def test_bad_nested_keys_are_named(tmp_path: Path, data: object, message: str) -> None:
    write_config(tmp_path, data)
    with pytest.raises(ConfigError) as caught:
        load_settings({"HOME": str(tmp_path)})
    assert message in str(caught.value)
