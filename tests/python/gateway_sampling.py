"""Calls a tool through `wasmgate serve` whose server asks for sampling,
with the official Python MCP SDK as the agent's client, and prints what it
saw as one JSON object on stdout (judged by tests/tests/gateway/sampling.rs).

  --stdio -- CMD ARGS...     the SDK spawns the gateway
  --http URL [--token T]     streamable HTTP
  --tool NAME                a tool to call (argument `question`); repeatable
  --no-sampling              the client declares no sampling capability

With sampling, the client's LLM is a fake that echoes what it was asked
(question, max_tokens, model hints, system prompt), so the test can check
what the gateway forwarded under the server's sampling policy.
"""

import argparse
import asyncio
import json
import os
import sys

import httpx
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


def text_of(result):
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def scenario(session, args, out, seen):
    await session.initialize()
    tools = (await session.list_tools()).tools
    out["tools"] = sorted(t.name for t in tools)
    out["calls"] = {}
    for tool in args.tool:
        r = await session.call_tool(tool, {"question": f"what is {tool}?"})
        out["calls"][tool] = {"is_error": bool(r.isError), "text": text_of(r)}
    out["sampling_requests"] = seen
    await asyncio.sleep(0.3)


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--http")
    ap.add_argument("--token")
    ap.add_argument("--stdio", action="store_true")
    ap.add_argument("--tool", action="append", required=True)
    ap.add_argument("--no-sampling", action="store_true")
    ap.add_argument("command", nargs="*")
    args = ap.parse_args()

    seen = []

    async def llm(context, params: types.CreateMessageRequestParams):
        first = params.messages[0].content
        question = first.text if isinstance(first, types.TextContent) else str(first)
        hints = [h.name for h in (params.modelPreferences.hints or [])] if params.modelPreferences else []
        seen.append({
            "question": question,
            "max_tokens": params.maxTokens,
            "hints": hints,
            "system_prompt": params.systemPrompt,
        })
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"echo[{question}] max={params.maxTokens}"),
            model="py-fake-llm",
            stopReason="endTurn",
        )

    callback = None if args.no_sampling else llm
    out = {}
    if args.stdio:
        params = StdioServerParameters(command=args.command[0], args=args.command[1:], env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, sampling_callback=callback) as session:
                await scenario(session, args, out, seen)
    else:
        headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
        async with httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30.0, read=300.0)) as client:
            async with streamable_http_client(args.http, http_client=client) as (read, write, _sid):
                async with ClientSession(read, write, sampling_callback=callback) as session:
                    await scenario(session, args, out, seen)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    asyncio.run(main())
