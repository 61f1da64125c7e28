"""Every library entry verified at the *interface* level matches its app's interface XML, and the check itself
catches a descriptor that does not.

Entries are found from the package's folder, so an entry added anywhere is checked once its entry.json
says `"level": "interface"`. The XML is what Debian packages ship under /usr/share/dbus-1/interfaces
(network-manager-dev and upower, installed by scripts/test) and the files committed under
tests/library/interfaces/, each opening with where and how it was recorded or extracted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.library.interface_check import RECORDED, check_file, known_interfaces
from tests.library.library_gateway import LIBRARY

THIS_TEST = "tests/library/test_interfaces.py"


def interface_entries() -> list[Path]:
    entries = sorted(LIBRARY.glob("*/entry.json"))
    return [e.parent for e in entries if json.loads(e.read_text())["verified"]["level"] == "interface"]


@pytest.fixture(scope="module")
def known() -> dict[str, Any]:
    return known_interfaces()


@pytest.mark.parametrize("app", interface_entries(), ids=lambda p: p.name)
def test_entry_matches_its_interface_xml(app: Path, known: dict[str, Any]) -> None:
    assert json.loads((app / "entry.json").read_text())["verified"]["test"] == THIS_TEST
    assert check_file(app / "aai.json", known) == []


def test_every_committed_interface_file_says_where_it_comes_from() -> None:
    files = sorted(RECORDED.glob("*.xml"))
    assert files
    for path in files:
        head = path.read_text(encoding="utf-8").lstrip()
        assert head.startswith("<!--"), f"{path.name} does not open with a comment saying where it comes from"
        comment = head[: head.index("-->")]
        assert "Debian" in comment, path.name
        assert "20" in comment, f"{path.name}: no date"


# A small interface for the checks below, in the introspection format apps and packages ship.
MAIL_XML = """<node>
  <interface name="org.example.Mail">
    <method name="Send">
      <arg name="to" type="s" direction="in"/>
      <arg name="copies" type="u" direction="in"/>
      <arg name="id" type="o" direction="out"/>
    </method>
    <method name="Archive"><arg name="ids" type="as" direction="in"/></method>
    <property name="Unread" type="u" access="read"/>
    <property name="Signature" type="s" access="readwrite"/>
    <signal name="Arrived"><arg name="id" type="o"/></signal>
  </interface>
</node>
"""


def descriptor(tmp_path: Path, *tools: dict[str, Any], interface: str = "org.example.Mail") -> Path:
    doc = {
        "schemaVersion": "1.0",
        "version": "1.0.0",
        "platform": "linux",
        "app": {"id": "org.example.mail", "name": {"en": "Mail"}, "defaultLang": "en", "description": "Mail"},
        "execution": {
            "type": "dbus",
            "service": "org.example.Mail",
            "objectPath": "/org/example/Mail",
            "interface": interface,
        },
        "tools": list(tools),
    }
    path = tmp_path / "org.example.mail" / "aai.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def mail_tool(name: str, execution: dict[str, Any], **props: Any) -> dict[str, Any]:
    return {
        "name": name,
        "description": name,
        "parameters": {"type": "object", "properties": props},
        "execution": execution,
    }


@pytest.fixture
def mail(tmp_path: Path) -> dict[str, Any]:
    folder = tmp_path / "xml"
    folder.mkdir()
    (folder / "org.example.Mail.xml").write_text(MAIL_XML)
    return known_interfaces([folder])


TO = {"type": "string"}
COPIES = {"type": "integer"}


def test_a_descriptor_that_matches_passes(tmp_path: Path, mail: dict[str, Any]) -> None:
    path = descriptor(
        tmp_path,
        mail_tool("send", {"method": "Send"}, to=TO, copies=COPIES),
        mail_tool("send_one", {"method": "Send", "args": ["${to}", 1]}, to=TO),
        mail_tool("archive", {"method": "Archive"}, ids={"type": "array", "items": {"type": "string"}}),
        mail_tool("unread", {"property": "Unread"}),
        mail_tool("set_signature", {"property": "Signature", "access": "set"}, text=TO),
    )
    assert check_file(path, mail) == []


@pytest.mark.parametrize(
    ("tool", "expected"),
    [
        (
            mail_tool("send", {"method": "SendNow"}, to=TO, copies=COPIES),
            "org.example.mail tool send: org.example.Mail has no method SendNow",
        ),
        (
            mail_tool("send", {"method": "Send"}, to=TO),
            "org.example.mail tool send: Send takes 2 arguments (signature 'su', to, copies) but the tool gives 1",
        ),
        (
            mail_tool("send", {"method": "Send"}, to=TO, copies={"type": "string"}),
            "org.example.mail tool send: Send argument 2 (copies) is DBus 'u' but the descriptor gives JSON string",
        ),
        (
            mail_tool("send", {"method": "Send", "args": ["${to}", "one"]}, to=TO),
            "org.example.mail tool send: Send argument 2 (copies) is DBus 'u' but the descriptor gives JSON string",
        ),
        (
            mail_tool("archive", {"method": "Archive"}, ids={"type": "array", "items": {"type": "integer"}}),
            "org.example.mail tool archive: Archive argument 1 (ids)[] is DBus 's' but the descriptor gives JSON "
            "integer",
        ),
        (
            mail_tool("unread", {"property": "Unseen"}),
            "org.example.mail tool unread: org.example.Mail has no property Unseen",
        ),
        (
            mail_tool("set_unread", {"property": "Unread", "access": "set"}, count=COPIES),
            "org.example.mail tool set_unread: property Unread is read in ",
        ),
        (
            mail_tool("set_signature", {"property": "Signature", "access": "set"}, text=COPIES),
            "org.example.mail tool set_signature: the value of property Signature is DBus 's' but the descriptor "
            "gives JSON integer",
        ),
        (
            mail_tool(
                "state",
                {"interface": "org.freedesktop.DBus.Properties", "method": "GetAll", "args": ["org.example.Mail"]},
            ),
            "org.example.mail tool state: interface org.freedesktop.DBus.Properties is in no interface XML",
        ),
    ],
    ids=["method", "count", "type", "constant", "array item", "property", "read-only", "value type", "interface"],
)
def test_a_mismatch_names_the_entry_tool_and_difference(
    tmp_path: Path, mail: dict[str, Any], tool: dict[str, Any], expected: str
) -> None:
    [problem] = check_file(descriptor(tmp_path, tool), mail)
    assert problem.startswith(expected), problem


def test_an_interface_no_xml_has_is_named(tmp_path: Path, mail: dict[str, Any]) -> None:
    path = descriptor(
        tmp_path, mail_tool("send", {"method": "Send"}, to=TO, copies=COPIES), interface="org.example.Post"
    )
    assert check_file(path, mail) == [
        "org.example.mail tool send: interface org.example.Post is in no interface XML that was searched"
    ]


def test_properties_calls_name_interfaces_and_properties_that_exist(tmp_path: Path, known: dict[str, Any]) -> None:
    """GetAll and Get through org.freedesktop.DBus.Properties (recorded standard interfaces) name a real interface."""

    def properties_call(method: str, *args: str) -> dict[str, Any]:
        return mail_tool(
            "state", {"interface": "org.freedesktop.DBus.Properties", "method": method, "args": list(args)}
        )

    good = descriptor(tmp_path / "good", properties_call("GetAll", "org.freedesktop.UPower.Device"))
    assert check_file(good, known) == []
    wrong_interface = descriptor(tmp_path / "bad", properties_call("GetAll", "org.freedesktop.UPower.Gadget"))
    [problem] = check_file(wrong_interface, known)
    assert "org.freedesktop.UPower.Gadget, which is in no interface XML searched" in problem
    wrong_property = descriptor(tmp_path / "worse", properties_call("Get", "org.freedesktop.UPower.Device", "Charge"))
    [problem] = check_file(wrong_property, known)
    assert problem.startswith("org.example.mail tool state: org.freedesktop.UPower.Device has no property Charge")


def test_a_library_entry_with_a_wrong_signature_fails(tmp_path: Path, known: dict[str, Any]) -> None:
    """A real entry, broken the way a hand edit would break it: the checker says what differs."""
    doc = json.loads((LIBRARY / "org.kde.kwin" / "aai.json").read_text())
    switch = next(t for t in doc["tools"] if t["name"] == "switch_desktop")
    switch["parameters"]["properties"]["number"]["type"] = "string"
    rename = next(t for t in doc["tools"] if t["name"] == "rename_desktop")
    rename["execution"]["method"] = "renameDesktop"
    path = tmp_path / "org.kde.kwin" / "aai.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc))
    problems = check_file(path, known)
    assert len(problems) == 2, problems
    assert problems[0].startswith(
        "org.kde.kwin tool switch_desktop: setCurrentDesktop argument 1 (desktop) is DBus 'i' but the descriptor "
        "gives JSON string"
    )
    assert problems[1].startswith("org.kde.kwin tool rename_desktop: org.kde.KWin.VirtualDesktopManager has no method")
