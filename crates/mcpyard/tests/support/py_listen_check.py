"""Opens a `subscriptions/listen` stream (protocol 2026-07-28) through the
gateway with the official Python SDK 2.x, makes two upstreams change (one
whose tool list grows, one whose watched resource is touched), and prints
on stdout, as JSON, what the stream acknowledged and the events it brought.

    py_listen_check.py URL
"""
import asyncio
import json
import sys

import anyio
from mcp import Client
from mcp.client.subscriptions import ResourceUpdated, ToolsListChanged


async def main(url: str) -> int:
    async with Client(url, mode="auto", read_timeout_seconds=30) as client:
        listen = client.listen(tools_list_changed=True, resource_subscriptions=["mem://a"])
        async with listen as sub:
            honored = sub.honored.model_dump(by_alias=True, exclude_none=True, mode="json")
            touched = await client.call_tool("watch__touch", {})
            await client.call_tool("grow__grow", {})
            events = []
            with anyio.fail_after(20):
                async for event in sub:
                    if isinstance(event, ResourceUpdated):
                        events.append({"kind": "resourceUpdated", "uri": event.uri})
                    elif isinstance(event, ToolsListChanged):
                        events.append({"kind": "toolsListChanged"})
                    else:
                        events.append({"kind": type(event).__name__})
                    if {"resourceUpdated", "toolsListChanged"} <= {e["kind"] for e in events}:
                        break
            tools = [t.name for t in (await client.list_tools()).tools]
        print(json.dumps({
            "protocolVersion": client.protocol_version,
            "honored": honored,
            "upstreamSubscribed": json.loads(touched.content[0].text),
            "events": events,
            "tools": tools,
        }))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1])))
