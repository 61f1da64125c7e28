"""Compare one revision's conformance results with its expected-failures list; print a short summary.

Called by scripts/conformance: compare.py RESULTS LIST URL SUITE_VERSION REVISION VERBOSE ROOT.
Exit 0 when they agree, 1 when they do not, 2 when the results or the list cannot be read.
"""

import json
import re
import sys
from pathlib import Path

results, expected, url, version, revision, verbose, root = sys.argv[1:]
results_dir, expected_path = Path(results), Path(expected)


def shown(path: Path) -> Path:
    return path.relative_to(root) if path.is_relative_to(root) else path


def fail_setup(message: str) -> None:
    print(f"conformance: {message}", file=sys.stderr)
    sys.exit(2)


# Every scenario the suite ran for this revision, in order: "=== Running scenario: name ===" in its log.
log = (results_dir / "suite.log").read_text()
scenarios = re.findall(r"^=== Running scenario: (\S+) ===$", log, re.MULTILINE)
if not scenarios:
    fail_setup(f"no scenarios in {results_dir / 'suite.log'}")

# The list: "scenario-name  # one-line reason"; blank lines and lines starting with # are ignored.
listed: dict[str, str] = {}
for number, raw in enumerate(expected_path.read_text().splitlines(), 1):
    line = raw.strip()
    if not line or line.startswith("#"):
        continue
    name, _, reason = (part.strip() for part in line.partition("#"))
    if not reason or " " in name:
        fail_setup(f"{shown(expected_path)}:{number}: expected 'scenario-name  # reason', got: {raw}")
    if name in listed:
        fail_setup(f"{shown(expected_path)}:{number}: {name} is listed twice")
    listed[name] = reason

# Outcome per scenario, as the suite's own baseline check decides it: a FAILURE or WARNING fails it.
stamp = re.compile(r"^server-(.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$")
outcome: dict[str, str | None] = {}  # scenario -> None when passed, else the first problem
checks_dir = results_dir / "checks"
for path in sorted(checks_dir.glob("*/checks.json")) if checks_dir.is_dir() else []:
    match = stamp.match(path.parent.name)
    if not match:
        continue
    name = match.group(1)
    problems = [
        ("" if c.get("id") == name else f"{c.get('id')}: ")
        + f"{c.get('status')}: {c.get('errorMessage') or c.get('description', '')}"
        for c in json.loads(path.read_text())
        if c.get("status") in ("FAILURE", "WARNING")
    ]
    outcome[name] = problems[0] if problems else None
for name in scenarios:
    outcome.setdefault(name, "no checks.json: the suite could not run this scenario (see suite.log)")

passed = [n for n in scenarios if outcome[n] is None]
unexpected = [n for n in scenarios if outcome[n] is not None and n not in listed]
expected_failed = [n for n in scenarios if outcome[n] is not None and n in listed]
stale = [n for n in scenarios if outcome[n] is None and n in listed]
unknown = [n for n in listed if n not in outcome]

print(f"MCP conformance {version}, requirements {revision}: {len(scenarios)} server scenarios against {url}")
if verbose == "1":
    for name in scenarios:
        state = "pass" if outcome[name] is None else ("xfail" if name in listed else "FAIL")
        print(f"  {state:5}  {name}" + ("" if outcome[name] is None else f"  ({outcome[name]})"))
for name in unexpected:
    print(f"  UNEXPECTED FAILURE  {name}: {outcome[name]}")
for name in stale:
    print(f"  NOW PASSES          {name}: remove it from {shown(expected_path)}")
for name in unknown:
    print(f"  NOT RUN             {name}: listed in {shown(expected_path)} but not a scenario of {revision}")
print(f"{len(expected_failed)} expected failures ({shown(expected_path)}) are counted as skipped;", end=" ")
print(f"results in {shown(results_dir)}/")
bad = len(unexpected) + len(stale) + len(unknown)
print(f"conformance {revision}: {len(passed) - len(stale)} passed, {bad} failed, {len(expected_failed)} skipped")
sys.exit(1 if bad else 0)
