"""One call to one app's tool: finding the app and the tool, the MCP servers served as apps, and the run
itself (arguments checked, consent asked, executor run, history recorded).

Plans and workflows (`aai_gateway.workflows`) sit above this; the transports reach it through
`aai_gateway.service.Gateway`.
"""

from aai_gateway.calls.apps import Apps
from aai_gateway.calls.caller import AppsChanged, Caller
from aai_gateway.calls.runner import Calls, Unsuccessful
from aai_gateway.calls.servers import Servers

__all__ = ["Apps", "AppsChanged", "Caller", "Calls", "Servers", "Unsuccessful"]
