#!/usr/bin/env python3
"""Connect to an MCP server with the official Python SDK, list its tools,
optionally call some, and print a JSON summary on stdout.

    py_client_check.py TARGET MODE [--tool NAME] [--args JSON] [--timeout SECONDS]
                                   [--expect-tool NAME] [--expect-text TEXT] [--allow-error]
                                   [--calls JSON] [--command JSON]

TARGET:
    http://HOST:PORT/mcp       Streamable HTTP
    sse:http://HOST:PORT/sse   legacy HTTP+SSE (SDK 2.x modes only)
    stdio                      start `--command` (a JSON array: program and
                               arguments) and talk on its stdin/stdout (SDK
                               2.x modes only)

--calls is a JSON array of {"name", "arguments", "expect"}: each tool is
called in turn and must answer without `isError`, with a text block
containing `expect` when given.

MODE:
    auto    SDK 2.x Client(mode="auto"): probes the 2026-07-28 `server/discover`,
            falls back to the initialize handshake (.tools/venv)
    legacy  SDK 2.x Client(mode="legacy"): initialize handshake only (.tools/venv)
    v1      SDK 1.x ClientSession over streamablehttp_client (.tools/venv1)

The script re-executes itself with the interpreter of the right venv under
.tools/ when started with another Python, so `python3 scripts/py_client_check.py`
works from anywhere once `scripts/install-test-deps.sh` has run.

Exit status: 0 on success; 1 when connecting, listing or calling failed, an
expectation was not met, or the tool answered `isError: true` (unless
--allow-error); 2 on bad usage or a missing venv. The summary is printed in
every case (`"ok": false` with an `error` on failure).
"""

from __future__ import annotations

import argparse
import asyncio
import builtins
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
VENVS = {"auto": "venv", "legacy": "venv", "v1": "venv1"}
REEXEC_GUARD = "MCPYARD_PY_CLIENT_CHECK_REEXEC"


def _sdk_version() -> str | None:
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover - Python < 3.8
        return None
    try:
        return version("mcp")
    except PackageNotFoundError:
        return None


def _ensure_interpreter(mode: str) -> None:
    """Re-exec under the venv whose SDK major version matches MODE."""
    have = _sdk_version()
    want_major = "1" if mode == "v1" else "2"
    if have is not None and have.split(".")[0] == want_major:
        return
    if os.environ.get(REEXEC_GUARD):
        _fail_usage(f"interpreter {sys.executable} has mcp {have}, mode {mode!r} needs mcp {want_major}.x")
    tools = Path(os.environ.get("MCPYARD_TOOLS", ROOT / ".tools"))
    python = tools / VENVS[mode] / "bin" / "python"
    if not python.exists():
        _fail_usage(f"{python} is missing: run scripts/install-test-deps.sh")
    os.environ[REEXEC_GUARD] = "1"
    os.execv(str(python), [str(python), str(Path(__file__).resolve()), *sys.argv[1:]])


def _fail_usage(message: str) -> None:
    print(json.dumps({"ok": False, "error": message}))
    sys.exit(2)


def _dump(model: Any) -> Any:
    """Wire-shaped JSON of an SDK model (pydantic v2 in both SDK majors)."""
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


def _v2_server(args: argparse.Namespace) -> Any:
    """What `Client` connects to for TARGET."""
    if args.url == "stdio":
        from mcp import StdioServerParameters

        if not args.command:
            _fail_usage("TARGET stdio needs --command")
        return StdioServerParameters(command=args.command[0], args=args.command[1:])
    if args.url.startswith("sse:"):
        from mcp.client.sse import sse_client

        return sse_client(args.url.removeprefix("sse:"))
    return args.url


async def _run_v2(args: argparse.Namespace, summary: dict[str, Any]) -> None:
    from mcp import Client

    async with Client(_v2_server(args), mode=args.mode, read_timeout_seconds=args.timeout) as client:
        summary["protocolVersion"] = client.protocol_version
        info = client.server_info
        summary["serverInfo"] = _dump(info) if info is not None else None
        tools: list[Any] = []
        cursor = None
        for _ in range(100):  # bounded: a server that never ends its pages cannot hang the check
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        summary["tools"] = [t.name for t in tools]
        if args.tool:
            result = await client.call_tool(args.tool, args.arguments)
            summary["call"] = {"name": args.tool, **_dump(result)}
        summary["calls"] = []
        for call in args.calls:
            result = await client.call_tool(call["name"], call.get("arguments", {}))
            summary["calls"].append({"name": call["name"], **_dump(result)})


async def _run_v1(args: argparse.Namespace, summary: dict[str, Any]) -> None:
    from datetime import timedelta

    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async with streamablehttp_client(args.url, timeout=args.timeout) as (read, write, _get_session_id):
        async with ClientSession(read, write, read_timeout_seconds=timedelta(seconds=args.timeout)) as session:
            init = await session.initialize()
            summary["protocolVersion"] = init.protocolVersion
            summary["serverInfo"] = _dump(init.serverInfo)
            tools: list[Any] = []
            cursor = None
            for _ in range(100):
                page = await session.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.nextCursor
                if cursor is None:
                    break
            summary["tools"] = [t.name for t in tools]
            if args.tool:
                result = await session.call_tool(args.tool, args.arguments)
                summary["call"] = {"name": args.tool, **_dump(result)}


def _check_call(call: dict[str, Any], expect: str | None, allow_error: bool) -> str | None:
    if call.get("isError") and not allow_error:
        return f"tool {call['name']!r} returned isError: true: {call.get('content')}"
    if expect is not None:
        texts = [c.get("text", "") for c in call.get("content", []) if c.get("type") == "text"]
        if not any(expect in t for t in texts):
            return f"no text block of {call['name']!r} contains {expect!r}: {texts}"
    return None


def _check_expectations(args: argparse.Namespace, summary: dict[str, Any]) -> str | None:
    for name in args.expect_tool:
        if name not in summary.get("tools", []):
            return f"tool {name!r} not listed"
    call = summary.get("call")
    if call is not None:
        problem = _check_call(call, args.expect_text, args.allow_error)
        if problem:
            return problem
    for wanted, call in zip(args.calls, summary.get("calls", [])):
        problem = _check_call(call, wanted.get("expect"), False)
        if problem:
            return problem
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url")
    parser.add_argument("mode", choices=sorted(VENVS))
    parser.add_argument("--tool", help="tool to call after listing")
    parser.add_argument("--args", default="{}", help="JSON object of tool arguments")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds for the whole check")
    parser.add_argument("--expect-tool", action="append", default=[], help="fail unless this tool is listed")
    parser.add_argument("--expect-text", help="fail unless a text block of the call result contains this")
    parser.add_argument("--allow-error", action="store_true", help="an isError result is not a failure")
    parser.add_argument("--calls", default="[]", help='JSON array of {"name", "arguments", "expect"}')
    parser.add_argument("--command", help="JSON array: the program to start for TARGET stdio, with its arguments")
    args = parser.parse_args()

    _ensure_interpreter(args.mode)
    try:
        args.calls = json.loads(args.calls)
        args.command = json.loads(args.command) if args.command else None
    except json.JSONDecodeError as e:
        _fail_usage(f"--calls or --command is not JSON: {e}")
    if args.mode == "v1" and (args.url == "stdio" or args.url.startswith("sse:") or args.calls):
        _fail_usage("mode v1 checks Streamable HTTP with --tool only")
    try:
        args.arguments = json.loads(args.args)
    except json.JSONDecodeError as e:
        _fail_usage(f"--args is not JSON: {e}")
    if not isinstance(args.arguments, dict):
        _fail_usage("--args must be a JSON object")

    summary: dict[str, Any] = {"ok": False, "mode": args.mode, "sdk": _sdk_version(), "url": args.url}
    runner = _run_v1 if args.mode == "v1" else _run_v2

    async def bounded() -> None:
        await asyncio.wait_for(runner(args, summary), timeout=args.timeout)

    try:
        asyncio.run(bounded())
    except BaseException as e:  # every failure becomes a JSON summary and exit 1
        if isinstance(e, KeyboardInterrupt):
            raise
        summary["error"] = _describe(e)
        if os.environ.get("PY_CLIENT_CHECK_TRACE"):
            traceback.print_exc()
        print(json.dumps(summary))
        return 1
    problem = _check_expectations(args, summary)
    if problem:
        summary["error"] = problem
        print(json.dumps(summary))
        return 1
    summary["ok"] = True
    print(json.dumps(summary))
    return 0


def _describe(e: BaseException) -> str:
    """One line naming the innermost real cause (anyio wraps failures in exception groups)."""
    group = getattr(builtins, "BaseExceptionGroup", ())
    while group and isinstance(e, group) and e.exceptions:
        e = e.exceptions[0]
    if isinstance(e, (asyncio.TimeoutError, TimeoutError)):
        return "timed out"
    return f"{type(e).__name__}: {e}"


if __name__ == "__main__":
    sys.exit(main())
