"""The one snake() and app_id_for() behind every generator (DBus, sdef, OpenAPI)."""

from __future__ import annotations

import pytest

from aai_gateway.authoring.names import APP_ID, MAX_TOOL_NAME, app_id_for, snake


@pytest.mark.parametrize(
    ("member", "name"),
    [
        ("Echo", "echo"),
        ("PlayPause", "play_pause"),
        ("OpenUri", "open_uri"),
        ("GetURL", "get_url"),
        ("HTTPServer2Start", "http_server2_start"),
        ("CanGoNext", "can_go_next"),
        ("already_snake", "already_snake"),
        ("Get_Value", "get_value"),
        ("_Private", "private"),
        ("TrackId", "track_id"),
        ("add note", "add_note"),
        ("listTasks", "list_tasks"),
        ("get-task.by id", "get_task_by_id"),
        ("Two__Parts", "two_parts"),
        ("2do", "_2do"),
        ("!!!", "_"),
        ("", "_"),
    ],
)
def test_names_become_snake_case(member: str, name: str) -> None:
    assert snake(member) == name


def test_snake_cuts_to_a_limit_only_when_given_one() -> None:
    long = "Get" + "Value" * 20
    assert len(snake(long)) == 3 + 6 * 20
    assert snake(long, MAX_TOOL_NAME) == snake(long)[:MAX_TOOL_NAME]
    assert snake("2" * 70, MAX_TOOL_NAME) == "_" + "2" * 63
    assert snake("Echo", MAX_TOOL_NAME) == "echo"


@pytest.mark.parametrize(
    ("dotted", "app_id"),
    [
        ("dev.aai.Echo", "dev.aai.echo"),
        ("org.mpris.MediaPlayer2.mpv", "org.mpris.mediaplayer2.mpv"),
        ("org.gnome.Shell_Extensions", "org.gnome.shell-extensions"),
        ("org.example.Two__Parts", "org.example.two-parts"),
        ("com.1password.App", "com.x-1password.app"),
        ("org.dunst-project.dunst", "org.dunst-project.dunst"),
        ("_private.Thing", "private.thing"),
        ("org.__", "local.org"),
        ("com.example.Jotter", "com.example.jotter"),
        ("com.Example.My_App", "com.example.my-app"),
        ("org.example.2do", "org.example.x-2do"),
        ("Jotter", "local.jotter"),
        ("com..example.", "com.example"),
    ],
)
def test_app_ids_come_from_bus_names_and_bundle_ids(dotted: str, app_id: str) -> None:
    assert app_id_for(dotted) == app_id
    assert APP_ID.match(app_id)


@pytest.mark.parametrize(
    ("dotted", "last", "unnamed", "app_id"),
    [
        ("com.example.api", "Tasks API", "api", "com.example.api.tasks-api"),
        ("", "Petstore", "api", "local.petstore"),
        ("1.0.0.127", "REST Tasks", "api", "x-1.x-0.x-0.x-127.rest-tasks"),
        ("com.example", "Example", "api", "com.example"),
        ("com.example.api", "API", "api", "com.example.api"),
        ("localhost", "!!!", "api", "localhost.api"),
        ("localhost", "!!!", "service", "localhost.service"),
        ("api", "API", "api", "local.api"),
        ("", "local", "api", "local.local"),
        ("example", "v1.2 Tasks", "api", "example.v1-2-tasks"),
    ],
)
def test_a_last_segment_ends_the_id_once(dotted: str, last: str, unnamed: str, app_id: str) -> None:
    assert app_id_for(dotted, last, unnamed=unnamed) == app_id
    assert APP_ID.match(app_id)
