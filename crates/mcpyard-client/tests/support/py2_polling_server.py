"""An MCP server built on the Python SDK 2.x (MCPServer) over Streamable
HTTP, with an event store, whose tools close their POST's SSE stream before
they answer (SSE polling, SEP-1699): the client must resume with GET and
Last-Event-ID to get the answer.

Usage: python py2_polling_server.py PORT RETRY_MS   (binds 127.0.0.1)

Tools: `later` (closes the stream, answers 0.3 s later), `never` (closes the
stream and never answers).
"""

import sys
from collections import OrderedDict

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore

server = MCPServer("py2-polling")


@server.tool()
async def later(ctx: Context) -> str:
    """Closes its stream, then answers."""
    await anyio.sleep(0.05)
    await ctx.close_sse_stream()
    await anyio.sleep(0.3)
    return "answered after the stream closed"


@server.tool()
async def never(ctx: Context) -> str:
    """Closes its stream and never answers."""
    await anyio.sleep(0.05)
    await ctx.close_sse_stream()
    await anyio.sleep(3600)
    return "too late"


class Events(EventStore):
    """Every event in memory, replayed per stream."""

    def __init__(self) -> None:
        self.events = OrderedDict()
        self.n = 0

    async def store_event(self, stream_id, message):
        self.n += 1
        event_id = f"{stream_id}:{self.n}"
        self.events[event_id] = (stream_id, message)
        return event_id

    async def replay_events_after(self, last_event_id, send_callback: EventCallback):
        if last_event_id not in self.events:
            return None
        stream_id, _ = self.events[last_event_id]
        seen = False
        for event_id, (sid, message) in list(self.events.items()):
            if event_id == last_event_id:
                seen = True
            elif seen and sid == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


if __name__ == "__main__":
    import uvicorn

    app = server.streamable_http_app(event_store=Events(), retry_interval=int(sys.argv[2]))
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
