"""A small MCP server (stdio, official Python SDK) whose tool `ask` asks
its client for sampling/createMessage while it handles the call, then
returns what the LLM said. The gateway tests (tests/tests/gateway/sampling.rs)
run it behind `wasmgate serve`, so the request travels
server -> wasmgate's client -> gateway -> the agent's client.
"""

from mcp import types
from mcp.server.fastmcp import Context, FastMCP

server = FastMCP("sampler")


@server.tool()
async def ask(question: str, ctx: Context) -> str:
    """Asks the client's LLM `question` (max_tokens 500, model hint `tiny-model`)."""
    result = await ctx.session.create_message(
        messages=[
            types.SamplingMessage(
                role="user", content=types.TextContent(type="text", text=question)
            )
        ],
        max_tokens=500,
        system_prompt="Answer in one line.",
        model_preferences=types.ModelPreferences(hints=[types.ModelHint(name="tiny-model")]),
        related_request_id=ctx.request_id,
    )
    text = result.content.text if isinstance(result.content, types.TextContent) else str(result.content)
    return f"model={result.model} stop={result.stopReason} answer={text}"


if __name__ == "__main__":
    server.run()
