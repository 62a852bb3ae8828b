"""Calls a tool as an MCP task with the official Python SDK 1.x (its
experimental tasks API), polls the task to a terminal status, fetches the
result, and prints a JSON summary on stdout.

    py_task_check.py URL TOOL ARGS_JSON

Exit status 0 when the task completed and its result is not an error.
"""
import asyncio
import json
import sys

from mcp import ClientSession, types
from mcp.client.streamable_http import streamablehttp_client


async def main(url: str, tool: str, args: dict) -> int:
    async with streamablehttp_client(url) as (read, write, _):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            created = await session.experimental.call_tool_as_task(tool, args, ttl=120000)
            task_id = created.task.taskId
            statuses = [created.task.status]
            async for status in session.experimental.poll_task(task_id):
                statuses.append(status.status)
            result = await session.experimental.get_task_result(task_id, types.CallToolResult)
            listed = await session.experimental.list_tasks()
            summary = {
                "protocolVersion": init.protocolVersion,
                "tasksCapability": init.capabilities.tasks is not None,
                "taskId": task_id,
                "statuses": statuses,
                "listed": [t.taskId for t in listed.tasks],
                "result": result.model_dump(mode="json", exclude_none=True),
            }
            print(json.dumps(summary))
            return 0 if statuses[-1] == "completed" and not result.isError else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]))))
