"""Calls a tool as an MCP task with the official Python SDK 1.x (its
experimental tasks API), follows it as the spec says (polls `tasks/get`; on
`input_required` calls `tasks/result`, where the server's requests arrive),
fetches the result, and prints a JSON summary on stdout.

    py_task_check.py URL TOOL ARGS_JSON

Elicitation requests are accepted with a filled-in form (the first choice
of an enum, else "blue") and recorded with their related-task `_meta`.
Exit status 0 when the task completed and its result is not an error.
"""
import asyncio
import json
import sys

from mcp import ClientSession, types
from mcp.client.streamable_http import streamablehttp_client

RELATED_TASK = "io.modelcontextprotocol/related-task"


def fill(schema: dict) -> dict:
    content = {}
    for name, prop in (schema.get("properties") or {}).items():
        choices = prop.get("oneOf") or [{"const": v} for v in prop.get("enum") or []]
        content[name] = choices[0]["const"] if choices else "blue"
    return content


async def main(url: str, tool: str, args: dict) -> int:
    elicitations = []

    async def on_elicit(context, params):
        meta = params.meta.model_dump(by_alias=True) if params.meta else {}
        elicitations.append({"message": params.message, "relatedTask": meta.get(RELATED_TASK)})
        return types.ElicitResult(action="accept", content=fill(params.requestedSchema))

    async with streamablehttp_client(url) as (read, write, _):
        async with ClientSession(read, write, elicitation_callback=on_elicit) as session:
            init = await session.initialize()
            created = await session.experimental.call_tool_as_task(tool, args, ttl=120000)
            task_id = created.task.taskId
            statuses = [created.task.status]
            async for status in session.experimental.poll_task(task_id):
                statuses.append(status.status)
                if status.status == "input_required":
                    # The requests the task waits on come with tasks/result.
                    await session.experimental.get_task_result(task_id, types.CallToolResult)
            final = await session.experimental.get_task(task_id)
            if final.status != statuses[-1]:
                statuses.append(final.status)
            result = await session.experimental.get_task_result(task_id, types.CallToolResult)
            listed = await session.experimental.list_tasks()
            summary = {
                "protocolVersion": init.protocolVersion,
                "tasksCapability": init.capabilities.tasks is not None,
                "taskId": task_id,
                "statuses": statuses,
                "elicitations": elicitations,
                "listed": [t.taskId for t in listed.tasks],
                "result": result.model_dump(mode="json", exclude_none=True),
            }
            print(json.dumps(summary))
            return 0 if statuses[-1] == "completed" and not result.isError else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]))))
