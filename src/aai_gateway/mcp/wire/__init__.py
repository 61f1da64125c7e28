"""The MCP wire the gateway answers itself, in front of the SDK, for stdio and HTTP alike.

The gateway is fast because it answers the hot messages itself instead of through the SDK's
per-request machinery; everything else is served by the SDK. The transports (`mcp/pipes.py` and
`mcp/stdio.py` for stdio, `mcp/http.py`'s front for HTTP) only move bytes: they hand each message
here and write what comes back.

- `jsonrpc`: the one JSON-RPC reader (`read`: a message MCP allows, or the refusal to answer,
  never an exception, deep nesting and invalid UTF-8 included), request ids, the error and
  answer wire forms (`error`, `encoded`).
- `screen`: the front every message passes before the SDK sees it, on every transport and with
  the fast paths on or off, so malformed input is answered the same way whichever path serves.
- `early`: a stdio session's `initialize` and first `tools/list`, answered before the SDK is
  imported; `front`: the rest of the session (calls, guides, pings, listings) served without the
  SDK until it asks for something only the SDK serves (these, `calls` and `jsonrpc` import nothing
  of the SDK but its types).
- `calls`: `tools/call` of an operation and its cancellation, taken off the stdio wire once the
  session is set up; `http`: the same for POSTs of an established HTTP session.

Both paths run a call through the same `Tools.run` and map errors through the same
`mcp/errors.answer`, and write the SDK's own wire form; the e2e parity tests (`test_stdio_fast`,
`test_http_fast`, `test_stdio_early`, `test_malformed`) hold the two byte for byte. What the fast
paths need of the SDK's internals is in `mcp/sdk_private.py`, and they stand aside, leaving
everything to the SDK, where those internals changed.
"""
