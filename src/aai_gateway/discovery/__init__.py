"""Finding descriptors: scan paths and app bundles, the index of apps the gateway serves, and web apps' own.

Writing descriptors (`--generate`, `--discover`) is `aai_gateway.authoring`'s.
"""

from aai_gateway.discovery.registry import Registry, Scan
from aai_gateway.discovery.scan import scan

__all__ = ["Registry", "Scan", "scan"]
