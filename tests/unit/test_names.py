from __future__ import annotations

import re
import socket

from aai_gateway.descriptor import Binding, Descriptor, Name, Tool
from aai_gateway.http_server import listening_socket
from aai_gateway.mcp.names import Names, Target
from aai_gateway.spelling import strict

STRICT = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def app(app_id: str, *tools: str) -> Descriptor:
    binding = Binding("linux", "dbus", tuple(Tool(t, "", {"type": "object"}) for t in tools))
    return Descriptor(app_id=app_id, names=(Name(app_id),), description="", bindings={"linux": binding}, shape="multi")


def test_spec_and_strict_names_resolve_in_both_spellings() -> None:
    names = Names([app("com.apple.mail", "send_email")], "linux", "strict")
    assert (names.guide("com.apple.mail"), names.exec, names.discover) == (
        "app_com_apple_mail",
        "aai_exec",
        "web_discover",
    )
    direct = Target("direct", "com.apple.mail", "send_email")
    assert names.resolve("com_apple_mail__send_email") == direct
    assert names.resolve("com.apple.mail:send_email") == direct
    assert (
        names.resolve("app:com.apple.mail") == names.resolve("app_com_apple_mail") == Target("guide", "com.apple.mail")
    )
    assert names.resolve("aai:exec") == names.resolve("aai_exec") == Target("exec")
    assert names.resolve("web:discover") == names.resolve("web_discover") == Target("discover")
    assert names.resolve("nothing") is None
    spec = Names([app("com.apple.mail")], "linux", "seed")
    assert (spec.guide("com.apple.mail"), spec.exec, spec.discover) == (
        "app:com.apple.mail",
        "aai:exec",
        "web:discover",
    )


def test_collisions_are_made_unique_and_reported() -> None:
    long_a = "org.example." + "a" * 60 + ".one"
    long_b = "org.example." + "a" * 60 + ".two"
    names = Names([app(long_a, "x.y", "x_y"), app(long_b)], "linux", "strict")
    first, second = names.guide(long_a), names.guide(long_b)
    assert first != second
    assert STRICT.match(first)
    assert STRICT.match(second)
    assert names.resolve(second) == Target("guide", long_b)
    assert len(names.collisions) == 2
    assert any("x_y" in c for c in names.collisions)
    assert names.resolve(strict(f"{long_a}__x.y")) is not None


def test_listening_socket_is_tcp_so_nodelay_applies() -> None:
    sock = listening_socket("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()
