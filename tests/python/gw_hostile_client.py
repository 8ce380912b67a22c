"""The agent's side of tests/tests/gateway/hostile.rs: the official Python
MCP SDK client against `wasmgate serve`, printing what it saw as one JSON
object on stdout. Every wait is bounded.

  --http URL --token T | --stdio -- CMD ARGS...
  --mode sample  --label L --question Q [--delay S] [--go FILE]
                 calls mcp_fx_ask (after FILE exists, if given); its LLM
                 answers "<L>:<question>" and records every question
                 (with --llm-delay S it answers only after S s; with
                 --signal FILE it creates FILE when first asked)
  --mode neighbour --label L --question Q --go FILE
                 after FILE exists: calls mcp_fx2_ping (another server),
                 then mcp_fx_ask, noting the wall-clock end of each
  --mode later   calls mcp_fx_later, waits, reads mcp_fx_outcome
  --mode late    initialize, tools/list, then waits for tools/list_changed
                 until mcp_late_ping is listed
  --mode change [--rounds N] [--hold S] [--idle-first S]
                 calls mcp_fx_change N times and notes each time whether
                 tools/list_changed arrived while that call was still running
  --mode flood --n N   calls mcp_fx_flood, then mcp_fx_list_count and mcp_fx_ping
"""

import argparse
import asyncio
import json
import os
import sys
import time

import httpx
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


def text_of(result):
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def call(session, name, args=None, timeout=60):
    r = await asyncio.wait_for(session.call_tool(name, args or {}), timeout)
    return {"is_error": bool(r.isError), "text": text_of(r)}


async def scenario(session, args, out, changed):
    t0 = time.monotonic()
    await asyncio.wait_for(session.initialize(), 20)
    out["initialize_s"] = round(time.monotonic() - t0, 3)
    tools = (await asyncio.wait_for(session.list_tools(), 20)).tools
    out["tools"] = sorted(t.name for t in tools)
    if args.mode == "sample":
        if args.go:
            for _ in range(600):
                if os.path.exists(args.go):
                    break
                await asyncio.sleep(0.05)
        out["call"] = await call(
            session, "mcp_fx_ask", {"question": args.question, "delay": args.delay}
        )
        out["call_end"] = time.time()
    elif args.mode == "neighbour":
        for _ in range(600):
            if os.path.exists(args.go):
                break
            await asyncio.sleep(0.05)
        out["other_server"] = await call(session, "mcp_fx2_ping")
        out["other_server_end"] = time.time()
        out["same_server"] = await call(session, "mcp_fx_ask", {"question": args.question})
        out["same_server_end"] = time.time()
    elif args.mode == "later":
        out["call"] = await call(session, "mcp_fx_later")
        # No call to the server while it asks (0.3 s after `later`): a call
        # in flight is what a request is tied to.
        outcome = "pending"
        for _ in range(20):
            await asyncio.sleep(1.5)
            outcome = (await call(session, "mcp_fx_outcome"))["text"]
            if outcome != "pending":
                break
        out["outcome"] = outcome
    elif args.mode == "late":
        names = out["tools"]
        for _ in range(0 if "mcp_late_ping" in names else 4):
            await asyncio.wait_for(changed.wait(), 60)
            changed.clear()
            tools = (await asyncio.wait_for(session.list_tools(), 20)).tools
            names = sorted(t.name for t in tools)
            if "mcp_late_ping" in names:
                break
        out["tools_after"] = names
        out["late_call"] = await call(session, "mcp_late_ping")
    elif args.mode == "change":
        # Idle first: the open streams must outlive the header timeout.
        await asyncio.sleep(args.idle_first)
        out["rounds"] = []
        for _ in range(args.rounds):
            changed.clear()
            task = asyncio.create_task(call(session, "mcp_fx_change", {"hold": args.hold}))
            t0 = time.monotonic()
            await asyncio.wait_for(changed.wait(), 30)
            notified_after = round(time.monotonic() - t0, 3)
            running = not task.done()
            result = await task
            out["rounds"].append(
                {"notified_after_s": notified_after, "call_running_when_notified": running, "call": result}
            )
        tools = (await asyncio.wait_for(session.list_tools(), 20)).tools
        out["tools_after"] = sorted(t.name for t in tools)
    elif args.mode == "flood":
        t0 = time.monotonic()
        out["flood"] = await call(session, "mcp_fx_flood", {"n": args.n}, timeout=300)
        out["flood_s"] = round(time.monotonic() - t0, 3)
        out["list_count"] = (await call(session, "mcp_fx_list_count"))["text"]
        out["ping"] = await call(session, "mcp_fx_ping")


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--http")
    ap.add_argument("--token")
    ap.add_argument("--stdio", action="store_true")
    ap.add_argument("--mode", required=True)
    ap.add_argument("--label", default="")
    ap.add_argument("--question", default="")
    ap.add_argument("--delay", type=float, default=0)
    ap.add_argument("--hold", type=float, default=0.6)
    ap.add_argument("--n", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--idle-first", type=float, default=0)
    ap.add_argument("--go")
    ap.add_argument("--signal")
    # The SDK runs the sampling callback inside its receive loop, so a
    # client whose LLM never returned would never read its call's result
    # either: a delay past the gateway's sampling timeout stands for it.
    ap.add_argument("--llm-delay", type=float, default=0)
    ap.add_argument("command", nargs="*")
    args = ap.parse_args()

    seen = []
    changed = asyncio.Event()

    async def llm(context, params: types.CreateMessageRequestParams):
        first = params.messages[0].content
        q = first.text if isinstance(first, types.TextContent) else str(first)
        seen.append(q)
        if args.signal:
            open(args.signal, "w").close()
        if args.llm_delay:
            await asyncio.sleep(args.llm_delay)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"{args.label}:{q}"),
            model="py-fake-llm",
            stopReason="endTurn",
        )

    async def on_message(message):
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ToolListChangedNotification
        ):
            changed.set()

    out = {}
    if args.stdio:
        params = StdioServerParameters(command=args.command[0], args=args.command[1:], env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, sampling_callback=llm, message_handler=on_message) as session:
                await scenario(session, args, out, changed)
    else:
        headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
        async with httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30.0, read=300.0)) as client:
            async with streamable_http_client(args.http, http_client=client) as (read, write, _sid):
                async with ClientSession(read, write, sampling_callback=llm, message_handler=on_message) as session:
                    await scenario(session, args, out, changed)
    out["sampling_seen"] = seen
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    asyncio.run(main())
