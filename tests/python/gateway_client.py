"""Drives `wasmgate serve` with the official Python MCP SDK (a client we did
not write) and prints what it saw as one JSON object on stdout. The Rust
tests in tests/tests/gateway_*.rs judge the result.

Transports:
  --stdio -- CMD ARGS...        the SDK spawns the gateway (stdio_client)
  --http URL [--token T]        streamable HTTP (streamable_http_client)

Steps (each optional):
  --repo DIR                    call mcp_git_log on DIR
  --appear-dir DIR --appear-cmd NAME --appear-tool TOOL
                                mid-session: create the executable DIR/NAME,
                                (send SIGHUP to --hup-pid), wait for
                                notifications/tools/list_changed, list again,
                                call TOOL on --repo
  --remove-plugin DIR           then delete that plugin folder, wait for
                                list_changed, list again
  --read-resource URI           read that resource (mime and text)
  --call-tool NAME              call that tool with no arguments (its text,
                                or the protocol error)
"""

import argparse
import asyncio
import json
import os
import shutil
import signal
import stat
import sys
import time

import httpx
from mcp import ClientSession, McpError, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

WAIT_SECONDS = 60


class Watcher:
    """Counts notifications/tools/list_changed from the server."""

    def __init__(self):
        self.tool_changes = 0
        self.prompt_changes = 0
        self.event = asyncio.Event()

    async def __call__(self, message):
        if isinstance(message, types.ServerNotification):
            root = message.root
            if isinstance(root, types.ToolListChangedNotification):
                self.tool_changes += 1
                self.event.set()
            elif isinstance(root, types.PromptListChangedNotification):
                self.prompt_changes += 1

    async def wait_change(self, before):
        deadline = time.monotonic() + WAIT_SECONDS
        while self.tool_changes <= before:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.event.clear()
            try:
                await asyncio.wait_for(self.event.wait(), timeout=min(left, 1.0))
            except asyncio.TimeoutError:
                pass
        return True


def text_of(result):
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def tool_names(session):
    return sorted(t.name for t in (await session.list_tools()).tools)


async def scenario(session, args, watcher, out):
    init = await session.initialize()
    out["server_name"] = init.serverInfo.name
    out["capabilities"] = {
        "tools_list_changed": bool(init.capabilities.tools and init.capabilities.tools.listChanged),
        "prompts": init.capabilities.prompts is not None,
        "resources": init.capabilities.resources is not None,
    }
    listed = await session.list_tools()
    out["tools"] = sorted(t.name for t in listed.tools)
    out["schemas"] = {t.name: t.inputSchema for t in listed.tools}

    if args.repo:
        r = await session.call_tool("mcp_git_log", {"path": args.repo, "max_count": 5})
        out["git_log"] = {
            "is_error": bool(r.isError),
            "text": text_of(r),
            "structured": r.structuredContent,
        }
        r = await session.call_tool("mcp_git_log", {"path": os.path.join(args.repo, "no-such-dir")})
        out["git_log_bad_path"] = {"is_error": bool(r.isError), "text": text_of(r)}

    try:
        await session.call_tool("mcp_blender_render", {})
        out["gated_call"] = {"error": None}
    except McpError as e:
        out["gated_call"] = {"error": e.error.message, "code": e.error.code}

    prompts = await session.list_prompts()
    out["prompts"] = sorted(p.name for p in prompts.prompts)
    if prompts.prompts:
        p = await session.get_prompt(prompts.prompts[0].name)
        out["first_prompt"] = {
            "name": prompts.prompts[0].name,
            "text": p.messages[0].content.text if p.messages else "",
        }
    resources = await session.list_resources()
    out["resources"] = sorted(str(r.uri) for r in resources.resources)
    if resources.resources:
        rr = await session.read_resource(resources.resources[0].uri)
        out["first_resource"] = {
            "uri": str(resources.resources[0].uri),
            "mime": rr.contents[0].mimeType,
            "text": getattr(rr.contents[0], "text", ""),
        }

    if args.read_resource:
        rr = await session.read_resource(args.read_resource)
        out["read_resource"] = {
            "mime": rr.contents[0].mimeType,
            "text": getattr(rr.contents[0], "text", ""),
        }
    if args.call_tool:
        try:
            r = await session.call_tool(args.call_tool, {})
            out["call_tool"] = {"is_error": bool(r.isError), "text": text_of(r)}
        except McpError as e:
            out["call_tool"] = {"error": e.error.message, "code": e.error.code}

    if args.appear_dir:
        before = watcher.tool_changes
        exe = os.path.join(args.appear_dir, args.appear_cmd)
        with open(exe, "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(exe, os.stat(exe).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        if args.hup_pid:
            os.kill(args.hup_pid, signal.SIGHUP)
        out["appear_notified"] = await watcher.wait_change(before)
        out["tools_after_appear"] = await tool_names(session)
        if args.appear_tool and args.appear_tool in out["tools_after_appear"]:
            r = await session.call_tool(args.appear_tool, {"path": args.repo or "."})
            out["appear_call"] = {"is_error": bool(r.isError), "text": text_of(r)}

    if args.remove_plugin:
        before = watcher.tool_changes
        shutil.rmtree(args.remove_plugin)
        out["remove_notified"] = await watcher.wait_change(before)
        out["tools_after_remove"] = await tool_names(session)

    out["tool_list_changed_count"] = watcher.tool_changes
    # Let late notifications arrive while the session is open: the SDK's
    # stdio reader raises if one comes after the session has closed.
    await asyncio.sleep(0.5)


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--http")
    ap.add_argument("--token")
    ap.add_argument("--stdio", action="store_true")
    ap.add_argument("--repo")
    ap.add_argument("--appear-dir")
    ap.add_argument("--appear-cmd")
    ap.add_argument("--appear-tool")
    ap.add_argument("--hup-pid", type=int)
    ap.add_argument("--remove-plugin")
    ap.add_argument("--read-resource")
    ap.add_argument("--call-tool")
    ap.add_argument("command", nargs="*")
    args = ap.parse_args()

    out = {}
    watcher = Watcher()
    if args.stdio:
        params = StdioServerParameters(command=args.command[0], args=args.command[1:], env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, message_handler=watcher) as session:
                await scenario(session, args, watcher, out)
    else:
        # Without the token the gateway must answer 401 (checked with plain httpx).
        async with httpx.AsyncClient() as plain:
            r = await plain.post(args.http, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                 headers={"Accept": "application/json, text/event-stream"})
            out["no_token_status"] = r.status_code
            out["no_token_connection"] = r.headers.get("connection")
            r = await plain.post(args.http, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                 headers={"Accept": "application/json, text/event-stream",
                                          "Authorization": "Bearer wrong-token"})
            out["wrong_token_status"] = r.status_code
            auth = {"Accept": "application/json, text/event-stream",
                    "Authorization": f"Bearer {args.token}"}
            r = await plain.post(args.http, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                 headers={**auth, "Origin": "http://attacker.example"})
            out["foreign_origin_status"] = r.status_code
            out["foreign_origin_connection"] = r.headers.get("connection")
            r = await plain.post(args.http, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                 headers={**auth, "Origin": "http://localhost:6274"})
            out["loopback_origin_status"] = r.status_code
        headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
        async with httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30.0, read=300.0)) as client:
            async with streamable_http_client(args.http, http_client=client) as (read, write, _sid):
                async with ClientSession(read, write, message_handler=watcher) as session:
                    await scenario(session, args, watcher, out)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    asyncio.run(main())
