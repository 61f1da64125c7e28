"""Many calls in one request: aai:batch, plans (aai:run) with results passed along and undone on
failure, and saved workflows. Above the calls, below the transports; the MCP layer and the executors
know nothing of them."""
