"""The official Python MCP SDK as the agent of `wasmgate serve --http
--prefix never` in front of the conformance fixture server (for
tests/tests/gateway/transparent.rs, which judges what this prints).

  gateway_transparent.py URL

Over streamable HTTP it sets the log level and calls the fixture's logging
tool (at `info`, then at `error`), calls `test_slow` with a progress
callback, lists and gets an upstream prompt, lists and reads an upstream
resource, calls `test_elicitation` and answers it, then starts a long
`test_slow`, cancels it after its first progress (notifications/cancelled)
and calls once more on the same session. Prints one JSON object.
"""

import argparse
import json

import anyio
import mcp.types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

# Longest wait for any one step, in seconds.
STEP = 60


def text(result):
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def main(url):
    out = {}
    logs = []
    elicited = []

    async def on_log(params: types.LoggingMessageNotificationParams):
        logs.append({"level": params.level, "data": params.data})

    async def on_elicit(context, params: types.ElicitRequestParams):
        elicited.append(params.message)
        return types.ElicitResult(
            action="accept", content={"username": "py-agent", "email": "py@example.com"}
        )

    async with streamablehttp_client(url) as (read, write, _):
        async with ClientSession(
            read, write, logging_callback=on_log, elicitation_callback=on_elicit
        ) as s:
            with anyio.fail_after(STEP):
                await s.initialize()

                # Over streamable HTTP log lines come on the session's own
                # stream, not the call's: wait for them (bounded).
                async def lines(n):
                    with anyio.move_on_after(10):
                        while len(logs) < n:
                            await anyio.sleep(0.02)
                    # A moment more, so a line too many is seen too.
                    await anyio.sleep(0.3)
                    got = list(logs)
                    logs.clear()
                    return got

                await s.set_logging_level("info")
                await s.call_tool("test_tool_with_logging", {})
                out["logs_at_info"] = await lines(3)
                # At `error` the three info lines are held back: the next
                # call at `info` brings exactly its own three (the stream
                # keeps order, so a line of the `error` call would be first).
                await s.set_logging_level("error")
                await s.call_tool("test_tool_with_logging", {})
                await s.set_logging_level("info")
                await s.call_tool("test_tool_with_logging", {})
                out["logs_at_error_then_info"] = await lines(3)

                progress = []

                async def on_progress(done, total, message):
                    progress.append([done, total])

                r = await s.call_tool("test_slow", {"seconds": 2}, progress_callback=on_progress)
                out["slow"] = text(r)
                out["progress"] = progress

                out["prompts"] = [p.name for p in (await s.list_prompts()).prompts]
                g = await s.get_prompt("test_prompt_with_arguments", {"arg1": "one", "arg2": "two"})
                out["prompt"] = [m.content.text for m in g.messages]
                out["resources"] = [str(r.uri) for r in (await s.list_resources()).resources]
                rr = await s.read_resource("test://static-text")
                out["resource"] = [c.text for c in rr.contents if hasattr(c, "text")]

                r = await s.call_tool("test_elicitation", {"message": "who are you?"})
                out["elicitation"] = text(r)
                out["elicited"] = list(elicited)

            # Cancellation: the SDK has no public handle on the id of a
            # request in flight, so the id the next request gets is read
            # from the session before it is sent.
            first = anyio.Event()

            async def on_first(done, total, message):
                first.set()

            request_id = s._request_id
            async with anyio.create_task_group() as tg:

                async def slow():
                    await s.call_tool("test_slow", {"seconds": 30}, progress_callback=on_first)

                tg.start_soon(slow)
                with anyio.fail_after(STEP):
                    await first.wait()
                await s.send_notification(
                    types.ClientNotification(
                        types.CancelledNotification(
                            params=types.CancelledNotificationParams(
                                requestId=request_id, reason="the agent changed its mind"
                            )
                        )
                    )
                )
                out["cancelled"] = request_id
                # A cancelled request gets no answer: stop waiting for it.
                tg.cancel_scope.cancel()

            with anyio.fail_after(STEP):
                r = await s.call_tool("test_simple_text", {})
                out["after_cancel"] = text(r)
    print(json.dumps(out))


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("url")
    anyio.run(main, p.parse_args().url)
