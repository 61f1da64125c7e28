"""Finding descriptors: scan paths and app bundles, and the index of apps the gateway serves."""

from aai_gateway.discovery.registry import Registry, Scan
from aai_gateway.discovery.scan import scan

__all__ = ["Registry", "Scan", "scan"]
