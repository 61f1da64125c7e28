"""HTTP methods by what they promise (RFC 9110 §9.2): the HTTP backend retries only idempotent ones."""

from __future__ import annotations

IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE"})
"""The idempotent methods among those a web tool may use (GET, HEAD, POST, PUT, PATCH, DELETE)."""
