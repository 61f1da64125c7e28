"""Events: what apps announce (DBus signals, MCP servers' notifications) or what polling their read-only
tools notices, for agents to wait on (`aai_wait`) and for triggers to start workflows on.

`Events.subscribe(app, event, filter)` gives a `Subscription`, an async iterator of `Occurrence`s with a
bounded queue of its own; every subscription of one app's event shares one source, started with the first
and stopped with the last. A source is one module (`signals`, `polls`, `notifications`) and one line in
`hub.SOURCES`.
"""
