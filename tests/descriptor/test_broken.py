"""Broken descriptors: each is reported with its file, a JSON pointer and a one-line message, never raised.

`broken/` holds the static corpus and `broken/expected.json` the problems each file must produce
(`pointer` exactly, `contains` a substring of the message, `severity` "error" unless said). Cases that
cannot be checked in (sizes, permissions, symlinks, FIFOs, bytes that are not UTF-8, deep nesting)
are made in `tmp_path`. The tests at the end pin edge cases that once crashed or misreported.
"""

from __future__ import annotations

import codecs
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NotRequired, TypedDict, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aai_gateway.cli import main as gateway_main
from aai_gateway.descriptor.validate import DEFAULT_MAX_BYTES, Loaded, check_bytes, check_document, load
from aai_gateway.problems import Problem
from tests.support import gateway_command

HERE = Path(__file__).resolve().parent
BROKEN = HERE / "broken"
SEEDS = sorted((HERE.parent / "golden" / "seeds").glob("*.json"))
NOBODY = 65534
MiB = 1024 * 1024


class Expected(TypedDict):
    pointer: str
    contains: str
    severity: NotRequired[str]


EXPECTED = cast(dict[str, list[Expected]], json.loads((BROKEN / "expected.json").read_text("utf-8")))
CORPUS = sorted(p.name for p in BROKEN.glob("*.json") if p.name != "expected.json")

VALID_CAMEL: dict[str, Any] = {
    "schemaVersion": "1.0",
    "version": "1.0.0",
    "platform": "linux",
    "app": {"id": "org.example.notes", "name": {"en": "Notes", "fr": "Notes"}, "defaultLang": "en"},
    "execution": {"type": "dbus", "service": "org.example.Notes", "objectPath": "/org/example/Notes"},
    "tools": [{"name": "add", "description": "Add a note", "parameters": {"type": "object", "properties": {}}}],
}


# --- helpers -----------------------------------------------------------------------------------


def listing(loaded: Loaded) -> str:
    return "\n".join(f"  [{p.severity}] {p.pointer!r}: {p.message}" for p in loaded.problems) or "  (no problems)"


def assert_problem(loaded: Loaded, pointer: str, contains: str, severity: str = "error") -> Problem:
    for problem in loaded.problems:
        if problem.pointer == pointer and contains in problem.message and problem.severity == severity:
            return problem
    pytest.fail(f"{loaded.source}: no {severity} at {pointer!r} containing {contains!r}; got:\n{listing(loaded)}")


def assert_only_problem(loaded: Loaded, contains: str) -> Problem:
    assert not loaded.ok
    assert len(loaded.problems) == 1, listing(loaded)
    return assert_problem(loaded, "", contains)


def cli(*args: str, cwd: Path | str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [gateway_command(), "validate", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


def problem_line(name: str, problem: Problem) -> str:
    """How `aai-gateway validate` prints one problem: `<file>#<pointer>: <message>`, pointer optional."""
    where = f"{name}#{problem.pointer}" if problem.pointer else name
    if problem.severity == "error":
        return f"!! {where}: {problem.message}"
    return f"?  {where}: {problem.severity}: {problem.message}"


def two_mib_descriptor(path: Path) -> Path:
    """A descriptor that would be valid, padded with whitespace to 2 MiB."""
    text = SEEDS[0].read_text("utf-8")
    path.write_text(text + " " * (2 * MiB - len(text.encode("utf-8"))), encoding="utf-8")
    assert path.stat().st_size == 2 * MiB
    return path


def symlink_loop(path: Path) -> Path:
    path.symlink_to(path.name)
    return path


# --- the static corpus ---------------------------------------------------------------------------


def test_corpus_and_expectations_name_the_same_files() -> None:
    assert len(CORPUS) >= 35
    assert sorted(EXPECTED) == CORPUS
    for name, problems in EXPECTED.items():
        assert problems, f"{name} lists no expected problem"
        for item in problems:
            assert set(item) <= {"pointer", "contains", "severity"}, name
            assert item["pointer"] == "" or item["pointer"].startswith("/"), name
            assert item.get("severity", "error") in ("error", "warning"), name


@pytest.mark.parametrize("name", CORPUS)
def test_broken_descriptor_is_reported(name: str) -> None:
    path = BROKEN / name
    loaded = load(path)
    expected = EXPECTED[name]
    warnings_only = all(item.get("severity", "error") == "warning" for item in expected)
    if warnings_only:
        assert loaded.ok, f"{name} should stay valid with warnings:\n{listing(loaded)}"
    else:
        assert not loaded.ok, f"{name} was accepted:\n{listing(loaded)}"
    assert loaded.problems
    for item in expected:
        assert_problem(loaded, item["pointer"], item["contains"], item.get("severity", "error"))
    for problem in loaded.problems:
        assert problem.file == str(path)
        assert "\n" not in problem.message, "a problem is one line"
        assert problem.message.strip() == problem.message != ""


DEEP = 100_000
DEEPLY_NESTED = {
    "arrays": "[" * DEEP + "]" * DEEP,
    "objects": '{"a": ' * DEEP + "1" + "}" * DEEP,
    "inside a descriptor": '{"appId": "com.example.x", "platforms": ' + "[" * DEEP + "]" * DEEP + "}",
}


@pytest.mark.parametrize("kind", sorted(DEEPLY_NESTED))
def test_json_nested_100000_levels_is_reported_not_raised(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "aai.json"
    path.write_text(DEEPLY_NESTED[kind])
    assert_only_problem(load(path), "JSON is nested too deeply to read")


# --- made at test time ---------------------------------------------------------------------------


def test_file_over_a_small_cap(tmp_path: Path) -> None:
    path = tmp_path / "aai.json"
    shutil.copyfile(SEEDS[0], path)
    assert path.stat().st_size > 100
    assert load(path).ok
    problem = assert_only_problem(load(path, max_bytes=100), "over the 100 bytes limit")
    assert problem.message.startswith("is ")


def test_two_mib_file_against_the_default_one_mib_cap(tmp_path: Path) -> None:
    assert DEFAULT_MAX_BYTES == 1024 * 1024
    path = two_mib_descriptor(tmp_path / "aai.json")
    assert_only_problem(load(path), "is 2.0 MiB, over the 1.0 MiB limit")
    assert load(path, max_bytes=3 * MiB).ok, "the padding is whitespace: only the size is wrong"


def as_reader(run: Callable[[], object], workdir: Path) -> subprocess.CompletedProcess[str]:
    """Run `run` in a forked child as a user that permissions apply to (root reads mode-000 files,
    so root becomes nobody); its stdout, stderr and exit status come back as a CompletedProcess."""
    out, err = workdir / "reader.out", workdir / "reader.err"
    codecs.lookup("utf-8-sig")  # imported lazily; nobody may not be able to read the Python installation
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 99
        try:
            with out.open("w") as stdout, err.open("w") as stderr:
                sys.stdout, sys.stderr = stdout, stderr
                try:
                    if os.geteuid() == 0:
                        os.setgroups([])
                        os.setgid(NOBODY)
                        os.setuid(NOBODY)
                    run()
                    code = 0
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else 1
                except BaseException:
                    traceback.print_exc()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return subprocess.CompletedProcess([], os.waitstatus_to_exitcode(status), out.read_text(), err.read_text())


def validate_command(*args: str) -> Callable[[], object]:
    return lambda: gateway_main(["validate", *args], prog_name="aai-gateway")


@pytest.fixture
def locked(tmp_path: Path) -> Iterator[Path]:
    """A descriptor of mode 000 in a directory of mode 700: user nobody cannot even stat it."""
    folder = tmp_path / "locked"
    folder.mkdir()
    target = folder / "aai.json"
    shutil.copyfile(SEEDS[0], target)
    target.chmod(0)
    folder.chmod(0o700)
    try:
        yield target
    finally:
        folder.chmod(0o755)
        target.chmod(0o644)


@pytest.fixture
def unreadable() -> Iterator[Path]:
    """A descriptor of mode 000 in a directory anyone can enter (tmp_path's parents are private to root)."""
    with tempfile.TemporaryDirectory(prefix="aai-broken-") as name:
        folder = Path(name)
        folder.chmod(0o755)
        target = folder / "aai.json"
        shutil.copyfile(SEEDS[0], target)
        target.chmod(0)
        yield target


@pytest.mark.parametrize("where", ["locked", "unreadable"])
def test_unreadable_file(request: pytest.FixtureRequest, where: str, tmp_path: Path) -> None:
    target: Path = request.getfixturevalue(where)
    result = as_reader(lambda: print(json.dumps([p.as_dict() for p in load(target).problems])), tmp_path)
    assert result.returncode == 0, result.stderr
    problems = json.loads(result.stdout)
    assert problems == [
        {"file": str(target), "pointer": "", "message": "cannot be read: permission denied", "severity": "error"}
    ]


def test_cli_reports_a_file_in_a_directory_it_cannot_enter(locked: Path, tmp_path: Path) -> None:
    result = as_reader(validate_command(str(SEEDS[0]), str(locked)), tmp_path)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1
    assert f"ok  {SEEDS[0]}: " in result.stdout
    assert f"!! {locked}: cannot be read: permission denied" in result.stdout.splitlines()


def test_cli_reports_an_unreadable_file_among_good_ones(unreadable: Path, tmp_path: Path) -> None:
    result = as_reader(validate_command(str(SEEDS[0]), str(unreadable)), tmp_path)
    assert "is not readable" not in result.stderr, result.stderr
    assert result.returncode == 1
    assert f"ok  {SEEDS[0]}: " in result.stdout
    assert f"!! {unreadable}: cannot be read: permission denied" in result.stdout.splitlines()


def test_directory_where_the_file_should_be(tmp_path: Path) -> None:
    path = tmp_path / "aai.json"
    path.mkdir()
    assert_only_problem(load(path), "is a directory, expected a JSON file")


def test_symlink_loop(tmp_path: Path) -> None:
    path = symlink_loop(tmp_path / "aai.json")
    assert_only_problem(load(path), "is a symlink loop and cannot be opened")


def test_dangling_symlink(tmp_path: Path) -> None:
    path = tmp_path / "aai.json"
    path.symlink_to("gone.json")
    assert_only_problem(load(path), "is a dangling symlink")


def test_missing_file(tmp_path: Path) -> None:
    assert_only_problem(load(tmp_path / "aai.json"), "does not exist")


def test_fifo_is_reported_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "aai.json"
    os.mkfifo(fifo)
    results: list[Loaded] = []
    worker = threading.Thread(target=lambda: results.append(load(fifo)), daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # lets a reader stuck in open() go
        pytest.fail("load() blocked on a FIFO")
    [loaded] = results
    assert_only_problem(loaded, "is not a regular file")
    result = cli(str(fifo), timeout=30)
    assert result.returncode == 1
    assert f"!! {fifo}: is not a regular file (a device, pipe or socket), so it is not read" in result.stdout


def test_latin1_bytes_name_the_byte_and_the_line(tmp_path: Path) -> None:
    path = tmp_path / "aai.json"
    path.write_bytes(b'{\n  "schema_version": "1.0",\n  "appId": "com.example.cafe",\n  "name": "Caf\xe9"\n}\n')
    problem = assert_only_problem(load(path), "is not UTF-8 text")
    assert "byte 0xe9" in problem.message
    assert "line 4" in problem.message


def test_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "aai.json"
    path.write_bytes(b"\xef\xbb\xbf" + SEEDS[0].read_bytes())
    assert load(path).ok


# --- the installed command -----------------------------------------------------------------------


def test_cli_reports_every_broken_file() -> None:
    result = cli(*CORPUS, cwd=BROKEN)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stdout.splitlines()
    valid = 0
    for name in CORPUS:
        assert name in result.stdout, f"{name} is not named in the output"
        loaded = load(BROKEN / name)
        valid += loaded.ok
        if loaded.descriptor is not None:
            assert any(line.startswith(f"ok  {name}: {loaded.descriptor.app_id} ") for line in lines), name
        for problem in loaded.problems:
            assert problem_line(name, problem) in lines
    form = re.compile(r"(ok  |!! |\?  )(\S+?)(#/\S*)?: .+")
    for line in lines[:-2]:
        match = form.fullmatch(line)
        assert match, f"unexpected line {line!r}"
        assert match[2] in CORPUS, line
    assert lines[-2:] == ["", f"{valid} valid, {len(CORPUS) - valid} invalid"]


def test_cli_one_bad_file_does_not_stop_the_good_ones(tmp_path: Path) -> None:
    bad = [
        tmp_path / "a-invalid.json",
        symlink_loop(tmp_path / "b-loop.json"),
        two_mib_descriptor(tmp_path / "c-big.json"),
        tmp_path / "d-dir.json",
        tmp_path / "e-null.json",
    ]
    bad[0].write_text('{"appId": "com.example.x",}')
    bad[3].mkdir()
    bad[4].write_text("null")
    good = []
    for seed in SEEDS:
        shutil.copyfile(seed, tmp_path / seed.name)
        good.append(tmp_path / seed.name)
    order = [bad[0], *good[:2], bad[1], bad[2], *good[2:], bad[3], bad[4]]
    result = cli(*(str(p) for p in order))
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    for path in good:
        descriptor = load(path).descriptor
        assert descriptor is not None
        assert f"ok  {path}: {descriptor.app_id} (" in result.stdout
    for path in bad:
        assert f"!! {path}: " in result.stdout
    assert result.stdout.splitlines()[-1] == f"{len(good)} valid, {len(bad)} invalid"


def test_cli_scan_folder_reports_bad_apps_and_the_good_ones(tmp_path: Path) -> None:
    for seed in SEEDS:
        (tmp_path / seed.stem).mkdir()
        shutil.copyfile(seed, tmp_path / seed.stem / "aai.json")
    for app in ("bad.json", "bad.big", "bad.dir", "bad.fifo"):
        (tmp_path / app).mkdir()
    (tmp_path / "bad.json" / "aai.json").write_text("{\n  'appId': 'x'\n}\n")
    two_mib_descriptor(tmp_path / "bad.big" / "aai.json")
    (tmp_path / "bad.dir" / "aai.json").mkdir()
    os.mkfifo(tmp_path / "bad.fifo" / "aai.json")
    result = cli(str(tmp_path), timeout=30)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    for seed in SEEDS:
        assert any(line.startswith(f"ok  {tmp_path / seed.stem / 'aai.json'}: ") for line in lines), seed.name
    expected = {
        "bad.json": "invalid JSON at line 2, column 3",
        "bad.big": "is 2.0 MiB, over the 1.0 MiB limit",
        "bad.dir": "is a directory, expected a JSON file",
        "bad.fifo": "is not a regular file",
    }
    for app, message in expected.items():
        assert any(line.startswith(f"!! {tmp_path / app / 'aai.json'}: {message}") for line in lines), app
    assert lines[-1] == f"{len(SEEDS)} valid, {len(expected)} invalid"


# --- properties --------------------------------------------------------------------------------

SHAPE_KEYS = [
    "schema_version", "schemaVersion", "appId", "name", "description", "version", "aliases", "platforms",
    "platform", "app", "id", "execution", "type", "base_url", "baseUrl", "tools", "parameters", "inputSchema",
    "returns", "timeout", "automation", "macos", "linux", "windows", "web", "android", "ios", "auth",
    "method", "endpoint", "script", "service", "properties", "required", "items", "minimum",
]  # fmt: skip
# Keys that once crashed check_document when added where no schema checks them.
RISKY_KEYS = ["raw", "timeout_scale", "timeoutScale", "base_url", "baseUrl"]

json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
json_keys = st.sampled_from(SHAPE_KEYS + RISKY_KEYS) | st.text(max_size=10)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(json_keys, children, max_size=6),
    max_leaves=40,
)


def paths_in(value: Any, at: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    yield at
    if isinstance(value, dict):
        for key, child in value.items():
            yield from paths_in(child, (*at, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from paths_in(child, (*at, index))


def value_at(doc: Any, at: tuple[str | int, ...]) -> Any:
    for step in at:
        doc = doc[step]
    return doc


VALID_DOCS: list[dict[str, Any]] = [json.loads(p.read_text("utf-8")) for p in SEEDS] + [VALID_CAMEL]


@st.composite
def mutated_descriptors(draw: st.DrawFn) -> Any:
    """A valid descriptor with one value replaced by arbitrary JSON, one key or item removed, or a key added."""
    doc = copy.deepcopy(draw(st.sampled_from(VALID_DOCS)))
    action = draw(st.sampled_from(["replace", "delete", "add"]))
    if action == "add":
        at = draw(st.sampled_from([p for p in paths_in(doc) if isinstance(value_at(doc, p), dict)]))
        value_at(doc, at)[draw(json_keys)] = draw(json_values)
        return doc
    at = draw(st.sampled_from(list(paths_in(doc))))
    if not at:
        return draw(json_values)
    parent = value_at(doc, at[:-1])
    if action == "delete":
        del parent[at[-1]]
    else:
        parent[at[-1]] = draw(json_values)
    return doc


def assert_well_formed(loaded: Loaded) -> None:
    assert loaded.source == "x"
    errors = [p for p in loaded.problems if p.severity == "error"]
    if loaded.descriptor is None:
        assert errors, "rejected without saying why"
    else:
        assert not errors, "accepted with errors"
    for problem in loaded.problems:
        assert isinstance(problem, Problem)
        assert problem.file == "x"
        assert problem.pointer == "" or problem.pointer.startswith("/")
        assert problem.message
        assert str(problem).startswith("x")


@settings(database=None, deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_check_document_never_raises_on_arbitrary_json(value: Any) -> None:
    assert_well_formed(check_document(value, "x"))


@settings(database=None, deadline=None, max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_descriptors())
def test_check_document_never_raises_on_a_mutated_descriptor(value: Any) -> None:
    assert_well_formed(check_document(value, "x"))


@settings(database=None, deadline=None, max_examples=200)
@given(st.binary(max_size=200) | json_values.map(lambda v: json.dumps(v).encode()))
def test_check_bytes_never_raises(data: bytes) -> None:
    assert_well_formed(check_bytes(data, "x"))


# --- edge cases: each once crashed or misreported --------------------------------------------


def single_web(**tool: Any) -> dict[str, Any]:
    return {
        "schema_version": "1.0",
        "version": "1.0.0",
        "platform": "web",
        "app": {"id": "com.example.api", "name": "Example", "description": "API"},
        "execution": {"type": "http", "base_url": "https://api.example.com"},
        "tools": [{"name": "search", "description": "Search", "parameters": {"type": "object"}, **tool}],
    }


def test_parameters_nested_200_levels_are_reported(tmp_path: Path) -> None:
    depth = 200  # about 400 levels of JSON: json.loads reads it, Draft7Validator.check_schema overflows
    inner = '{"type": "object", "properties": {"x": ' * depth + "{}" + "}}" * depth
    doc = json.dumps(single_web(parameters="@")).replace('"@"', inner)
    path = tmp_path / "aai.json"
    path.write_text(doc)
    assert_problem(load(path), "/tools/0/parameters", "nested too deeply")


def test_integer_with_5000_digits_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "aai.json"
    path.write_text('{"appId": ' + "9" * 5000 + "}")
    assert not load(path).ok


def test_check_document_with_a_huge_integer_is_reported() -> None:
    assert not check_document({"appId": 10**5000}, "x").ok


@pytest.mark.parametrize("literal", ["NaN", "Infinity"])
def test_nan_and_infinity_are_refused(literal: str) -> None:
    data = json.dumps(single_web(timeout="@")).replace('"@"', literal).encode()
    loaded = check_bytes(data, "x")
    assert not loaded.ok, f"a {literal} timeout (not JSON) was accepted"


def test_tool_execution_key_raw_stays_an_option() -> None:
    loaded = check_document(single_web(execution={"path": "/s", "raw": 1}), "x")
    assert loaded.descriptor is not None
    assert loaded.descriptor.bindings["web"].tools[0].options["raw"] == 1


def test_tool_execution_timeout_scale_does_not_change_the_timeout() -> None:
    loaded = check_document(single_web(timeout=5, execution={"timeout_scale": 0}), "x")
    assert loaded.descriptor is not None
    assert loaded.descriptor.bindings["web"].tools[0].timeout == 5.0


def test_missing_fields_are_reported_once() -> None:
    loaded = load(BROKEN / "multi-only-appid.json")
    messages = [str(p) for p in loaded.problems]
    assert len(messages) == len(set(messages)), "\n".join(messages)


def test_duplicate_key_warning_points_at_its_object() -> None:
    data = json.dumps(single_web()).replace('"name": "Example"', '"name": "A", "name": "Example"').encode()
    assert_problem(check_bytes(data, "x"), "/app", "key 'name' appears twice", "warning")


def test_name_of_only_separators_is_refused() -> None:
    doc = single_web()
    doc["app"]["name"] = "|||"
    loaded = check_document(doc, "x")
    assert not loaded.ok, f"accepted with names {loaded.descriptor and loaded.descriptor.names}"


def test_cli_folder_reports_broken_symlinks(tmp_path: Path) -> None:
    (tmp_path / "good").mkdir()
    shutil.copyfile(SEEDS[0], tmp_path / "good" / "aai.json")
    (tmp_path / "loop").mkdir()
    symlink_loop(tmp_path / "loop" / "aai.json")
    (tmp_path / "dangling").mkdir()
    (tmp_path / "dangling" / "aai.json").symlink_to("gone.json")
    result = cli(str(tmp_path))
    assert f"!! {tmp_path / 'loop' / 'aai.json'}: is a symlink loop" in result.stdout, result.stdout
    assert f"!! {tmp_path / 'dangling' / 'aai.json'}: is a dangling symlink" in result.stdout, result.stdout


@pytest.mark.parametrize("key", ["baseUrl", "base_url"])
def test_base_url_of_the_other_spelling_must_be_a_string(key: str) -> None:
    doc = single_web() if key == "baseUrl" else copy.deepcopy(VALID_CAMEL)
    doc["execution"][key] = {"prod": "https://api.example.com"}
    loaded = check_document(doc, "x")
    assert_problem(loaded, f"/execution/{key}", "must be a string")
