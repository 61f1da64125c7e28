"""Turns the interface listings of systemd's DBus man pages into introspection XML.

systemd's man pages (org.freedesktop.systemd1(5), org.freedesktop.login1(5), ...) list every interface of the
running service in a small IDL (`node /path { interface name { methods: Name(in s a, out o b); ... } }`),
written by systemd's own build from the introspection of the real objects. Where the service cannot run
here (it needs systemd as PID 1), this turns the listing the Debian package ships into the XML
`interface_check` reads:

    python -m tests.library.man_idl /usr/share/man/man5/org.freedesktop.systemd1.5.gz \
        org.freedesktop.systemd1.Manager org.freedesktop.systemd1.Unit > tests/library/interfaces/x.xml
"""

from __future__ import annotations

import gzip
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from xml.sax.saxutils import quoteattr

ESCAPES = (("\\&", ""), ("\\*(Aq", "'"), ("\\-", "-"), ("\\e", "\\"), ("\\fB", ""), ("\\fR", ""), ("\\fI", ""))
INTERFACE = re.compile(r"^\s*interface\s+(\S+)\s*\{\s*$")
PROPERTY = re.compile(r"^(readonly|readwrite|writeonly)\s+(\S+)\s+(\w+)")
ACCESS = {"readonly": "read", "readwrite": "readwrite", "writeonly": "write"}


def listing(man_page: Path) -> list[str]:
    """The lines of the man page's IDL blocks (between .nf and .fi, starting with `node`), unescaped."""
    text = gzip.decompress(man_page.read_bytes()).decode("utf-8")
    for old, new in ESCAPES:
        text = text.replace(old, new)
    lines: list[str] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("node "):
            inside = True
        elif line.startswith(".fi"):
            inside = False
        if inside and not line.lstrip().startswith("@"):
            lines.append(line)
    return lines


def interfaces(lines: list[str], wanted: set[str]) -> dict[str, str]:
    """XML `<interface>` elements by name, for the first full listing of each wanted interface."""
    found: dict[str, str] = {}
    name: str | None = None
    section = ""
    body: list[str] = []
    for line in lines:
        start = INTERFACE.match(line)
        if start:
            name, section, body = start.group(1), "", []
            continue
        if name is None:
            continue
        stripped = line.strip()
        if stripped == "};":
            if name in wanted and name not in found:
                found[name] = _element(name, body)
            name = None
        elif stripped in ("methods:", "signals:", "properties:"):
            section = stripped[:-1]
        else:
            body.append(f"{section}\t{stripped}")
    return found


def _element(name: str, body: list[str]) -> str:
    out = [f"  <interface name={quoteattr(name)}>"]
    for section in ("methods", "signals", "properties"):
        text = " ".join(line.split("\t", 1)[1] for line in body if line.startswith(section + "\t"))
        for item in (part.strip() for part in text.split(";")):
            if not item:
                continue
            if section == "properties":
                match = PROPERTY.match(item)
                assert match, item
                access, kind, prop = match.groups()
                out.append(f'    <property name="{prop}" type={quoteattr(kind)} access="{ACCESS[access]}"/>')
                continue
            member, args = item[: item.index("(")], item[item.index("(") + 1 : item.rindex(")")]
            tag = "method" if section == "methods" else "signal"
            out.append(f'    <{tag} name="{member}">')
            for arg in (a.split() for a in args.split(",") if a.strip()):
                direction = f' direction="{arg[0]}"' if tag == "method" else ""
                kind, arg_name = arg[-2], arg[-1]
                out.append(f"      <arg name={quoteattr(arg_name)} type={quoteattr(kind)}{direction}/>")
            out.append(f"    </{tag}>")
    out.append("  </interface>")
    return "\n".join(out)


def main(argv: list[str]) -> None:
    man_page, wanted = Path(argv[0]), argv[1:]
    owner = subprocess.run(["dpkg", "-S", str(man_page)], capture_output=True, text=True, check=True).stdout.split(":")[
        0
    ]
    version = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", owner], capture_output=True, text=True, check=True
    ).stdout.strip()
    found = interfaces(listing(man_page), set(wanted))
    missing = [w for w in wanted if w not in found]
    if missing:
        sys.exit(f"{man_page} lists no interface {', '.join(missing)}")
    today = datetime.now(UTC).date().isoformat()
    command = "python -m tests.library.man_idl " + " ".join(argv)
    print(
        f"<!-- {', '.join(wanted)}: converted on {today} from the interface listing in {man_page.name} "
        f"shipped by the Debian package {owner} {version} (systemd writes that listing from the introspection "
        f"of the real objects), with: {command} -->"
    )
    print("<node>")
    print("\n".join(found[w] for w in wanted))
    print("</node>")


if __name__ == "__main__":
    main(sys.argv[1:])
