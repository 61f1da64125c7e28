"""The README documents every command and option of the command line, and the docs' links lead somewhere.

Every config key is held to the README by `test_config.py`; these hold the command line to the Commands
section, and the relative links of the README, the changelog and docs/ to files that exist.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from aai_gateway.cli import main
from tests.support import ROOT

README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)\s]*)?\)")


def section(text: str, heading: str) -> str:
    """The text of a `## heading` section, up to the next `## ` heading."""
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def commands(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    for name, command in group.commands.items():
        path = (*prefix, name)
        yield path, command
        if isinstance(command, click.Group):
            yield from commands(command, path)


def options(command: click.Command) -> set[str]:
    return {
        flag
        for param in command.params
        if isinstance(param, click.Option)
        for flag in param.opts
        if flag.startswith("--") and flag != "--help"
    }


def test_every_command_is_in_the_commands_table() -> None:
    table = section(README.read_text("utf-8"), "Commands")
    rows = re.findall(r"^\| `aai-gateway ([^`]*)` \|", table, re.MULTILINE)
    assert rows
    names = [" ".join(path) for path, _ in commands(main)]
    # A subcommand may be documented inside its group's row (`history show ID` in the `history` row).
    missing = [n for n in names if not any(r == n or r.startswith(f"{n} ") for r in rows) and f"`{n} " not in table]
    assert not missing, missing


def test_every_option_is_in_the_commands_section() -> None:
    table = section(README.read_text("utf-8"), "Commands")
    missing = [
        f"{' '.join(path) or 'aai-gateway'} {flag}"
        for path, command in [((), main), *commands(main)]
        for flag in sorted(options(command))
        if f"`{flag}" not in table and f"{flag}`" not in table and f" {flag}" not in table
    ]
    assert not missing, missing


@pytest.mark.parametrize("page", [README, ROOT / "CHANGELOG.md", *DOCS], ids=lambda p: p.name)
def test_relative_links_lead_to_files_that_exist(page: Path) -> None:
    targets = [t for t in LINK.findall(page.read_text("utf-8")) if "://" not in t]
    broken = [t for t in targets if not (page.parent / t).exists()]
    assert not broken, broken


def test_the_readme_links_the_performance_and_generate_pages() -> None:
    readme = README.read_text("utf-8")
    assert "(docs/performance.md)" in section(readme, "Performance")
    assert "(docs/generate.md)" in section(readme, "Commands")
    for page in ("performance.md", "generate.md"):
        assert (ROOT / "docs" / page).is_file()
