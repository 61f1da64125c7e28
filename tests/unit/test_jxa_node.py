"""Prepared JXA scripts run for real in a Node stand-in for osascript: values arrive as data, unchanged.

`tests/standins/jxa_host.js` reads the script from stdin like `osascript -l JavaScript -`, calls
`run(argv)` and records every call made on `Application(...)`; the records must carry each value
byte-identical, whatever it contains, and nothing a value says may run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aai_gateway import templates
from aai_gateway.executors import jxa

NODE = shutil.which("node")
HOST = Path(__file__).resolve().parent.parent / "standins" / "jxa_host.js"
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "a": {"type": "string"},
        "b": {"type": "string"},
        "c": {"type": "string"},
        "d": {"type": "string"},
        "items": {"type": "array", "items": {"type": "string"}, "default": []},
    },
}
TEMPLATE = """var app = Application("Recorder");
app.code(${a});
app.whole("${b}");
app.inside('<${c}>');
app.template(`[${d}]`);
app.nested(`${ "(" + '${a}' + ")" }`);
for (const item of ${items}) app.each(item);
"done"
"""
PREPARED = jxa.prepare(TEMPLATE, SCHEMA)

HOSTILE = [
    "",
    "'",
    '"',
    "\\",
    '\\"',
    "\\'",
    "`",
    "${a}",
    "${constructor}",
    "`${process.exit(3)}`",
    "$()",
    "$(id)",
    '" & (do shell script "id") & "',
    "'); doShellScript('id'); ('",
    '"); Application.currentApplication().doShellScript("id"); ("',
    "*/ app.pwned(); /*",
    "</script>",
    "%COMSPEC%",
    "a\nb",
    "a\rb\r\n",
    "line\u2028separator\u2029paragraph",
    "\u202eevil\u202c שלום عربي",
    "👩\u200d💻🏳️\u200d🌈",
    "nul\x00inside",
    "lone \ud800 surrogate \udfff",
    "\ufeff\x7f\x1b[31m",
    "\\u0022); app.pwned(); (\\u0022",
    "{{ 7*7 }}",
    "null",
    "undefined",
]
TEXT = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(st.characters(codec=None, exclude_categories=())),
    st.lists(st.one_of(st.sampled_from(HOSTILE), st.text(max_size=4))).map("".join),
)


@dataclass
class Ran:
    code: int
    stdout: str
    stderr: str
    records: list[dict[str, Any]]

    def calls(self, method: str) -> list[list[Any]]:
        target = f'Application("Recorder").{method}'
        return [r["args"] for r in self.records if r["op"] == "call" and r["target"] == target]


def host(source: str, argv: list[str], env: Mapping[str, str] | None = None) -> Ran:
    assert NODE is not None
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "records.jsonl"
        ran = subprocess.run(
            [NODE, str(HOST), "-l", "JavaScript", "-", *argv],
            input=source.encode(),
            capture_output=True,
            env={**os.environ, **(env or {}), "AAI_JXA_LOG": str(log)},
            check=False,
            timeout=60,
        )
        # split on "\n" only: JSON text may hold U+2028 and other characters str.splitlines breaks at
        lines = log.read_text(encoding="utf-8").split("\n")[:-1] if log.exists() else []
    return Ran(ran.returncode, ran.stdout.decode(), ran.stderr.decode(), [json.loads(line) for line in lines])


def check_positions(values: Mapping[str, Any]) -> None:
    ran = host(PREPARED.source, PREPARED.argv(values))
    assert (ran.code, ran.stderr, ran.stdout) == (0, "", "done\n")
    a, b, c, d = (values[k] for k in "abcd")
    assert ran.calls("code") == [[a]]
    assert ran.calls("whole") == [[b]]
    assert ran.calls("inside") == [[f"<{c}>"]]
    assert ran.calls("template") == [[f"[{d}]"]]
    assert ran.calls("nested") == [[f"({a})"]]
    assert ran.calls("each") == [[item] for item in values.get("items", [])]
    assert not [r for r in ran.records if r.get("property") == "pwned" or "pwned" in r.get("target", "")]
    assert not [r for r in ran.records if r.get("target", "").startswith("Application.currentApplication")]


@settings(max_examples=110, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TEXT, TEXT, TEXT, TEXT)
def test_values_arrive_byte_identical_in_every_position(a: str, b: str, c: str, d: str) -> None:
    check_positions({"a": a, "b": b, "c": c, "d": d})


@settings(max_examples=90, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TEXT, max_size=8))
def test_lists_of_arbitrary_text_arrive_item_by_item(items: list[str]) -> None:
    check_positions({"a": "", "b": "", "c": "", "d": "", "items": items})


def test_the_hostile_corpus_in_one_run() -> None:
    check_positions({"a": HOSTILE[12], "b": HOSTILE[13], "c": HOSTILE[7], "d": HOSTILE[9], "items": HOSTILE})


def test_values_of_100_kb() -> None:
    chunk = "Grüße \u202e\u05e9\u05dc\u05d5\u05dd\u202c 👩\u200d💻 \" \\ ' ` ${a} $(id) \n\r\u2028 "
    big = (chunk * (100_000 // len(chunk.encode()) + 1)).encode()[:100_000].decode(errors="ignore")
    assert len(big.encode()) > 99_990
    check_positions({"a": big, "b": "", "c": "", "d": ""})
    check_positions({"a": "", "b": big[::-1], "c": "", "d": ""})


def test_values_keep_their_json_type_in_code() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "number"}, "o": {"type": "object"}, "f": {}}}
    prepared = jxa.prepare('Application("Recorder").code(${n} * 2, ${o}, ${f}, "${o}", `${n}`); ${o}', schema)
    ran = host(prepared.source, prepared.argv({"n": 2.5, "o": {"k": [1, None, "é"]}}))
    assert ran.calls("code") == [[5, {"k": [1, None, "é"]}, None, '{"k":[1,null,"é"]}', "2.5"]]
    assert json.loads(ran.stdout) == {"k": [1, None, "é"]}


def test_a_canary_that_would_run_if_pasted_stays_data(tmp_path: Path) -> None:
    canary = tmp_path / f"pwned-{uuid.uuid4().hex}"
    escape = f'Application.constructor("return process")().mainModule.require("fs").writeFileSync({str(canary)!r}, "x")'
    payload = f'"); {escape}; ("'
    template = 'Application("Recorder").say("${text}")'
    schema = {"type": "object", "properties": {"text": {"type": "string"}}}

    pasted = templates.render(template, {"text": payload})  # what a naive gateway would run
    assert host(pasted, []).code == 0
    assert canary.exists(), "the canary must be able to fire, or this test proves nothing"
    canary.unlink()

    prepared = jxa.prepare(template, schema)
    for text in (payload, f'"); require("fs").writeFileSync({str(canary)!r}, "x"); ("', HOSTILE[12], HOSTILE[13]):
        ran = host(prepared.source, prepared.argv({"text": text}))
        assert (ran.code, ran.stderr) == (0, "")
        assert ran.calls("say") == [[text]]
        assert not canary.exists()
        assert [r["op"] for r in ran.records] == ["argv", "application", "get", "call"]


def test_the_host_answers_like_osascript() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    thrown = jxa.prepare('throw new Error("boom " + ${n})', schema)
    ran = host(thrown.source, thrown.argv({"n": 7}))
    assert (ran.code, ran.stdout, ran.stderr) == (1, "", "execution error: Error: Error: boom 7 (-2700)\n")

    broken = jxa.prepare("var x = 1;\nvar = ${n};", schema)
    ran = host(broken.source, broken.argv({"n": 7}))
    assert (ran.code, ran.stdout) == (1, "")
    assert ran.stderr.startswith(f"{len('if (false) {var x = 1;') + 1 + 4}:")
    assert ran.stderr.endswith(": syntax error: Error on line 2: SyntaxError: Unexpected token '=' (-2700)\n")
    assert [r["op"] for r in ran.records] == ["argv"]  # nothing ran

    empty = jxa.prepare('console.log("not printed"); var unused = ${n}', schema)
    ran = host(empty.source, empty.argv({"n": 1}))
    assert (ran.code, ran.stdout, ran.stderr) == (0, "\n", "")
    assert {"op": "log", "args": ["not printed"]} in ran.records


def test_the_host_plays_configured_app_answers_and_errors() -> None:
    schema = {"type": "object", "properties": {"to": {"type": "string"}}}
    prepared = jxa.prepare(
        'const mail = Application("Mail");\n'
        "const n = mail.accounts.length;\n"
        'mail.send("${to}");\n'
        "`${n} accounts, ${mail.name()}`",
        schema,
    )
    answers = {'Application("Mail").accounts.length': 2, 'Application("Mail").name()': "Mail"}
    ran = host(prepared.source, prepared.argv({"to": "x"}), {"AAI_JXA_RETURNS": json.dumps(answers)})
    assert (ran.code, ran.stdout) == (0, "2 accounts, Mail\n")

    denied = {'Application("Mail").send': {"message": "Not authorized to send Apple events to Mail.", "number": -1743}}
    ran = host(prepared.source, prepared.argv({"to": "x"}), {"AAI_JXA_THROWS": json.dumps(denied)})
    assert (ran.code, ran.stdout) == (1, "")
    assert ran.stderr == "execution error: Error: Error: Not authorized to send Apple events to Mail. (-1743)\n"
    assert ran.records[-1] == {"op": "call", "target": 'Application("Mail").send', "args": ["x"]}


def test_the_mail_example() -> None:
    schema = {
        "type": "object",
        "properties": {"subject": {"type": "string"}, "body": {"type": "string"}, "count": {"type": "integer"}},
    }
    template = (
        'var mail = Application("Mail"); var m = mail.OutgoingMessage({subject: "${subject}", content: "${body}"}); '
        'mail.outgoingMessages.push(m); m.send(); "sent " + ${count}'
    )
    prepared = jxa.prepare(template, schema)
    values = {"subject": 'Re: "hi" & (do shell script "id")', "body": "line 1\nline 2 ${count}", "count": 3}
    ran = host(prepared.source, prepared.argv(values))
    assert (ran.code, ran.stdout, ran.stderr) == (0, "sent 3\n", "")
    mail = 'Application("Mail")'
    created = {"subject": values["subject"], "content": values["body"]}
    assert [r for r in ran.records if r["op"] == "call"] == [
        {"op": "call", "target": f"{mail}.OutgoingMessage", "args": [created]},
        {
            "op": "call",
            "target": f"{mail}.outgoingMessages.push",
            "args": [{"$specifier": f"{mail}.OutgoingMessage()"}],
        },
        {"op": "call", "target": f"{mail}.OutgoingMessage().send", "args": []},
    ]
