"""Writing descriptors: `--generate` (DBus introspection, macOS sdef, OpenAPI) and the `--discover` probes.

The command line alone imports this package; the gateway serving apps never does (an import-linter
contract holds it to that). Its modules are imported where used, since some need a platform's
libraries (dbus-fast on Linux).
"""
