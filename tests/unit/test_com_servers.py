"""Registered COM servers read from an in-memory registry: which classes count, their names, and the
descriptors that already drive them."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import pytest

from aai_gateway.authoring import com_servers
from aai_gateway.descriptor import Descriptor
from aai_gateway.descriptor.validate import check_document
from aai_gateway.errors import AutomationNotSupported

WORD = "{000209FF-0000-0000-C000-000000000046}"
OUTLOOK = "{0006F03A-0000-0000-C000-000000000046}"
LEGACY = "{11111111-2222-3333-4444-555555555555}"
INPROC = "{22222222-2222-3333-4444-555555555555}"
NO_PROGID = "{33333333-2222-3333-4444-555555555555}"
UNNAMED = "{44444444-2222-3333-4444-555555555555}"


class FakeRegistry:
    """HKEY_CLASSES_ROOT as key path → {value name → string}; subkeys follow from the paths."""

    def __init__(self, keys: Mapping[str, Mapping[str, str]]) -> None:
        self.keys = {path.lower(): dict(values) for path, values in keys.items()}
        self.names = {path.lower(): path for path in keys}

    def subkeys(self, path: str) -> list[str]:
        prefix = path.lower() + "\\"
        found = {self.names[k][len(prefix) :].split("\\")[0] for k in self.keys if k.startswith(prefix)}
        return sorted(found)

    def value(self, path: str, name: str = "") -> str | None:
        return self.keys.get(path.lower(), {}).get(name)


def server_keys(root: str, clsid: str, **parts: str) -> dict[str, dict[str, str]]:
    keys = {f"{root}\\{clsid}": {"": parts.pop("default", "")}}
    for sub, value in parts.items():
        keys[f"{root}\\{clsid}\\{sub}"] = {"": value}
    return keys


REGISTRY = FakeRegistry({
    **server_keys("CLSID", WORD, default="Microsoft Word Application", ProgID="Word.Application.16",
                  VersionIndependentProgID="Word.Application",
                  LocalServer32='"C:\\Program Files\\Microsoft Office\\root\\Office16\\WINWORD.EXE" /Automation'),
    "Word.Application": {"": "Microsoft Word Application"},
    **server_keys("WOW6432Node\\CLSID", OUTLOOK, ProgID="Outlook.Application.16",
                  VersionIndependentProgID="Outlook.Application",
                  LocalServer32="C:\\Program Files (x86)\\Microsoft Office\\root\\Office16\\OUTLOOK.EXE"),
    "Outlook.Application": {"": "  Microsoft   Outlook  "},
    **server_keys("CLSID", LEGACY, default="Legacy Server", ProgID="Legacy.App", LocalServer32="C:\\legacy.exe"),
    **server_keys("WOW6432Node\\CLSID", LEGACY, ProgID="Legacy.App", LocalServer32="C:\\legacy32.exe"),
    **server_keys("CLSID", INPROC, ProgID="Scripting.FileSystemObject", InprocServer32="C:\\scrrun.dll"),
    **server_keys("CLSID", NO_PROGID, LocalServer32="C:\\nameless.exe"),
    **server_keys("CLSID", UNNAMED, ProgID="Bare.Server.1", LocalServer32="C:\\bare.exe"),
    f"CLSID\\{UNNAMED}\\LocalServer32": {"": "   "},
})  # fmt: skip


def windows_app(app_id: str, progid: str | None = None, created: str | None = None) -> Descriptor:
    section: dict[str, Any] = {"automation": "com", "tools": []}
    if progid:
        section["progid"] = progid
    if created:
        section["tools"] = [{"name": "t", "description": "d", "parameters": {"type": "object", "properties": {}},
                             "script": [{"action": "create", "var": "app", "progid": created},
                                        {"action": "return", "var": "app"}]}]  # fmt: skip
    loaded = check_document({"schema_version": "1.0", "appId": app_id, "name": "X", "description": "x",
                             "platforms": {"windows": section}}, "test")  # fmt: skip
    assert loaded.descriptor is not None, loaded.problems
    return loaded.descriptor


def test_out_of_process_servers_with_a_progid_are_listed() -> None:
    servers = com_servers.find_servers(REGISTRY)
    assert [(s.progid, s.versioned_progid, s.name, s.clsid) for s in servers] == [
        ("Legacy.App", None, "Legacy Server", LEGACY),
        ("Outlook.Application", "Outlook.Application.16", "Microsoft Outlook", OUTLOOK),
        ("Word.Application", "Word.Application.16", "Microsoft Word Application", WORD),
    ]
    by_id = {s.progid: s for s in servers}
    assert by_id["Word.Application"].server == (
        '"C:\\Program Files\\Microsoft Office\\root\\Office16\\WINWORD.EXE" /Automation'
    )
    assert by_id["Legacy.App"].server == "C:\\legacy.exe"  # the native registration wins over the 32-bit one


def test_names_fall_back_from_the_progid_to_the_class_to_the_progid_itself() -> None:
    registry = FakeRegistry({
        **server_keys("CLSID", UNNAMED, ProgID="Bare.Server.1", LocalServer32="C:\\bare.exe"),
        **server_keys("CLSID", LEGACY, default="Class Name", ProgID="Named.Class", LocalServer32="C:\\n.exe"),
    })  # fmt: skip
    assert [(s.progid, s.name) for s in com_servers.find_servers(registry)] == [
        ("Bare.Server.1", "Bare.Server.1"),
        ("Named.Class", "Class Name"),
    ]


def test_descriptors_that_drive_a_server_are_named() -> None:
    installed = [
        windows_app("com.microsoft.word", progid="word.application"),
        windows_app("dev.aai.word-letters", created="Word.Application.16"),
        windows_app("com.microsoft.outlook"),
        windows_app("outlook.application"),
    ]
    servers = {s.progid: s for s in com_servers.find_servers(REGISTRY, installed)}
    assert servers["Word.Application"].described_by == ("com.microsoft.word", "dev.aai.word-letters")
    assert servers["Outlook.Application"].described_by == ("outlook.application",)
    assert servers["Legacy.App"].described_by == ()
    assert servers["Word.Application"].to_json() == {
        "progid": "Word.Application",
        "versionedProgid": "Word.Application.16",
        "name": "Microsoft Word Application",
        "server": '"C:\\Program Files\\Microsoft Office\\root\\Office16\\WINWORD.EXE" /Automation',
        "clsid": WORD,
        "describedBy": ["com.microsoft.word", "dev.aai.word-letters"],
    }


def test_report_reads_like_the_linux_one() -> None:
    servers = com_servers.find_servers(REGISTRY, [windows_app("com.microsoft.word", progid="Word.Application")])
    lines = com_servers.report(servers)
    assert lines[0] == "COM servers (out-of-process, with a ProgID): 3"
    text = "\n".join(lines)
    assert (
        "\nWord.Application  Microsoft Word Application  [described by com.microsoft.word]\n"
        '  "C:\\Program Files\\Microsoft Office\\root\\Office16\\WINWORD.EXE" /Automation\n'
        f"  CLSID {WORD}  (ProgID Word.Application.16)\n"
    ) in text
    assert f"\nLegacy.App  Legacy Server\n  C:\\legacy.exe\n  CLSID {LEGACY}\n" in text
    assert lines[-1].startswith("Describe one in ~/.aai/<appId>/aai.json")


def test_an_empty_registry_lists_nothing() -> None:
    assert com_servers.find_servers(FakeRegistry({})) == []
    assert com_servers.report([]) == [
        "COM servers (out-of-process, with a ProgID): 0",
        "",
        "Describe one in ~/.aai/<appId>/aai.json with a windows section (automation com, progid).",
    ]


@pytest.mark.skipif(sys.platform == "win32", reason="winreg exists on Windows")
def test_the_real_registry_needs_windows() -> None:
    with pytest.raises(AutomationNotSupported, match=r"Windows registry \(winreg\), which this system does not have"):
        com_servers.WinRegistry()


@pytest.mark.skipif(sys.platform != "win32", reason="winreg exists only on Windows")
def test_the_real_registry_answers_on_windows() -> None:  # pragma: no cover - Windows runners
    registry = com_servers.WinRegistry()
    assert registry.subkeys("CLSID")
    assert registry.value("CLSID\\{no-such-class}") is None
    com_servers.find_servers(registry)
