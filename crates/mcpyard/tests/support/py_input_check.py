"""Calls tools that need the client (sampling, elicitation, roots) with the
Python SDK 2.x in its default mode, answering each request with values that
name the caller, and prints one JSON summary.

    py_input_check.py TARGET LABEL CALLS_JSON [--command JSON] [--mode auto|legacy]

TARGET is a Streamable HTTP URL or `stdio` (then --command is the program to
start, as a JSON array). LABEL goes into every answer, so concurrent clients
can check they got their own. CALLS_JSON is a list of [tool, arguments].
Run with .tools/venv's Python."""

import argparse
import asyncio
import json

import mcp_types as types
from mcp import Client, StdioServerParameters


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("target")
    parser.add_argument("label")
    parser.add_argument("calls")
    parser.add_argument("--command")
    parser.add_argument("--mode", default="auto", choices=["auto", "legacy"])
    args = parser.parse_args()
    label = args.label
    asked: list[str] = []

    async def sampling(_context, params):
        asked.append("sampling")
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"sampled for {label}"),
            model="test-model",
            stop_reason="endTurn",
        )

    async def elicitation(_context, params):
        asked.append("elicitation")
        return types.ElicitResult(action="accept", content={"name": f"user {label}"})

    async def roots(_context):
        asked.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri=f"file:///work/{label}", name=label)])

    server = args.target
    if server == "stdio":
        argv = json.loads(args.command)
        server = StdioServerParameters(command=argv[0], args=argv[1:])
    summary = {"ok": False, "label": label, "results": []}
    try:
        async with Client(
            server,
            mode=args.mode,
            sampling_callback=sampling,
            elicitation_callback=elicitation,
            list_roots_callback=roots,
            read_timeout_seconds=60,
        ) as client:
            summary["protocolVersion"] = client.protocol_version
            for name, arguments in json.loads(args.calls):
                result = await client.call_tool(name, arguments)
                summary["results"].append(
                    {"name": name, **result.model_dump(by_alias=True, mode="json", exclude_none=True)}
                )
        summary["ok"] = True
    except BaseException as e:  # the summary says what failed
        group = getattr(__builtins__, "BaseExceptionGroup", ())
        while group and isinstance(e, group) and e.exceptions:
            e = e.exceptions[0]
        summary["error"] = f"{type(e).__name__}: {e}"
    summary["asked"] = asked
    print(json.dumps(summary))


if __name__ == "__main__":
    asyncio.run(asyncio.wait_for(main(), timeout=120))
