"""A small MCP server (stdio, official Python SDK, low-level API) that
misbehaves on request, for the gateway tests in tests/tests/gateway/hostile.rs.

  --delay-start S   sleep S seconds before answering anything (a slow
                    cold start: the gateway must not make its own client
                    wait for it)

Tools:
  ask {question, delay}  waits `delay` s, then asks its client for sampling
                         with `question`; returns "answer=<the LLM's text>"
  later                  returns at once; 0.3 s later it asks for sampling
                         outside any call (the gateway must refuse it)
  outcome                what became of `later`'s request
  flood {n}              sends n notifications/tools/list_changed (its
                         tools/list answers take 50 ms meanwhile)
  list_count             how many tools/list requests it has answered
  change {hold}          adds one more tool `added_<k>`, sends
                         tools/list_changed, then holds the call `hold` s
                         before it returns
  ping                   "pong"
"""

import argparse
import asyncio
import time

import anyio
import mcp.types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

server = Server("gw-fixture")
state = {"list_calls": 0, "added": 0, "later": "pending", "flooding": False}
background = set()


def tool(name, props=None):
    return types.Tool(
        name=name,
        description=f"gw-fixture {name}",
        inputSchema={"type": "object", "properties": props or {}},
    )


def text(s):
    return [types.TextContent(type="text", text=s)]


def question(q):
    return [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=q))]


@server.list_tools()
async def list_tools():
    state["list_calls"] += 1
    if state["flooding"]:
        # A slow tools/list while it floods: a client that starts one
        # refresh per notification piles them up.
        await anyio.sleep(0.05)
    tools = [
        tool("ask", {"question": {"type": "string"}, "delay": {"type": "number"}}),
        tool("later"),
        tool("outcome"),
        tool("flood", {"n": {"type": "integer"}}),
        tool("list_count"),
        tool("change", {"hold": {"type": "number"}}),
        tool("ping"),
    ]
    tools.extend(tool(f"added_{k}") for k in range(1, state["added"] + 1))
    return tools


@server.call_tool()
async def call_tool(name, arguments):
    ctx = server.request_context
    if name == "ask":
        await anyio.sleep(float(arguments.get("delay", 0)))
        r = await ctx.session.create_message(messages=question(arguments["question"]), max_tokens=50)
        return text(f"answer={r.content.text}")
    if name == "later":
        session = ctx.session

        async def ask_later():
            await anyio.sleep(0.3)
            try:
                r = await session.create_message(messages=question("out of band"), max_tokens=5)
                state["later"] = f"answered: {r.content.text}"
            except Exception as e:  # the refusal is what the test reads
                state["later"] = f"refused: {e}"

        task = asyncio.get_running_loop().create_task(ask_later())
        background.add(task)
        return text("scheduled")
    if name == "outcome":
        return text(state["later"])
    if name == "flood":
        n = int(arguments["n"])
        state["flooding"] = True
        try:
            for _ in range(n):
                await ctx.session.send_tool_list_changed()
        finally:
            state["flooding"] = False
        return text(f"sent {n}")
    if name == "list_count":
        return text(str(state["list_calls"]))
    if name == "change":
        state["added"] += 1
        await ctx.session.send_tool_list_changed()
        await anyio.sleep(float(arguments.get("hold", 0.6)))
        return text("changed")
    if name == "ping" or name.startswith("added_"):
        return text("pong")
    raise ValueError(f"no tool {name}")


async def main():
    async with stdio_server() as (read, write):
        options = server.create_initialization_options(
            notification_options=NotificationOptions(tools_changed=True)
        )
        await server.run(read, write, options)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--delay-start", type=float, default=0)
    args = ap.parse_args()
    if args.delay_start:
        time.sleep(args.delay_start)
    anyio.run(main)
