"""The command line: parse, build a Gateway, print. The only package that imports click."""

from aai_gateway.cli.root import main

__all__ = ["main"]
