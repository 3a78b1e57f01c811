"""A hostile MCP server for the tests (in-process, or over stdio when run as a script).

Its ``serverInfo.name`` is what the caller asks for (``HOSTILE_NAME`` by default: 1 MB with control
characters and a lone surrogate). Every sampling request it sends carries distinct random model
hints, control characters and lone surrogates in hints, system prompt and stop sequences, a deeply
nested ``metadata``, and text, image and audio content. Tools:

* ``ask(seed)``: one such request through a ``Sample`` resolver (both protocol paths); returns
  ``"<model>|<stopReason>"`` of the answer.
* ``flood(seed, count, light=False)``: ``count`` such requests one after another on the legacy
  path (``ctx.session.send_request``); returns how many were answered. ``light``: text content
  only and metadata 8 levels deep (the long memory run: the hostile names and hints, cheaper).

Run as ``python hostile_server.py [NAME_LENGTH]`` it serves over stdio (without lone surrogates,
which mcp cannot put on the wire).
"""

import random
import sys
from typing import Annotated

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer, Resolve, Sample
from mcp.shared.message import ServerMessageMetadata

# A lone surrogate reaches a host only in-process: mcp's JSON serialiser refuses to write one
# (pydantic_core: "surrogates not allowed") and its parser refuses the escape ("unexpected end of
# hex escape"), so over stdio this server sends none (SURROGATE is emptied in __main__).
SURROGATE = "\ud800"
HOSTILE_SUFFIX = "\x00\x1b[31m\u202e\ud800\u2028"
HOSTILE_NAME = "n" * 1_000_000 + HOSTILE_SUFFIX
# The deepest metadata nesting an mcp 2.x server sends in-process: deeper, its own pydantic_core
# serialiser raises "Maximum serialization depth exceeded" (between 250 and 300 levels, measured).
# Over a real transport the client's JSON parser stops earlier ("recursion limit exceeded", the
# message is dropped and the call never answered: mcp's behaviour, with or without us), so the
# stdio server nests WIRE_METADATA_DEPTH levels. A host can still dispatch deeper metadata
# in-process (tests/test_hostile_mcp.py goes to 10 000 levels).
METADATA_DEPTH = 250
WIRE_METADATA_DEPTH = 190
HINTS_PER_REQUEST = 4
IMAGE = "iVBORw0KGgo" * 1000  # base64-looking, 11 kB
AUDIO = "UklGRiQAAABXQVZFZm10" * 500


def nested(depth: int) -> dict:
    value: dict = {"leaf": "\x00" + SURROGATE}
    for level in range(depth - 1):
        value = {f"l{level}\x07": value}
    return value


def hostile_params(seed: int, depth: int | None = None) -> dict:
    """Request fields for request number ``seed``: hints never seen before, hostile strings;
    ``metadata`` nested ``depth`` levels (default ``METADATA_DEPTH``)."""
    rng = random.Random(seed)  # noqa: S311 - reproducible test data, not cryptography
    suffix = HOSTILE_SUFFIX.replace("\ud800", SURROGATE)
    hints = [
        types.ModelHint(name=f"{seed}-{rng.getrandbits(64):x}{suffix}" + "h" * rng.randrange(0, 400))
        for _ in range(HINTS_PER_REQUEST)
    ]
    return {
        "max_tokens": rng.choice([1, 64, 2**62, 2**80]),
        "system_prompt": f"sys\x00\x1b{SURROGATE}{seed}" + "s" * 2000,
        "stop_sequences": [f"stop\x00{seed}", SURROGATE + "\u202e", "x" * 5000],
        "model_preferences": types.ModelPreferences(hints=hints),
        "include_context": rng.choice(["none", "thisServer", "allServers"]),
        "metadata": {"deep": nested(depth or METADATA_DEPTH), "seed": seed, "ctl\x00": SURROGATE},
    }


def hostile_messages(seed: int, media: bool = True) -> list:
    text = [types.SamplingMessage(role="user", content=types.TextContent(text=f"hi\x00{SURROGATE} {seed}"))]
    return (
        text
        if not media
        else [
            *text,
            types.SamplingMessage(role="user", content=types.ImageContent(data=IMAGE, mime_type="image/png\x00")),
            types.SamplingMessage(
                role="user", content=types.AudioContent(data=AUDIO, mime_type="audio/wav" + SURROGATE)
            ),
        ]
    )


def build_hostile_server(name: str = HOSTILE_NAME) -> MCPServer:
    # No `from __future__ import annotations` here: MCPServer evaluates the tool annotations.
    server = MCPServer(name, version="\x00v" * 1000)

    def sample(seed: int) -> Sample:
        return Sample(hostile_messages(seed), **hostile_params(seed))

    @server.tool()
    async def ask(answer: Annotated[types.CreateMessageResult, Resolve(sample)], seed: int = 0) -> str:
        return f"{answer.model}|{answer.stop_reason}"

    @server.tool()
    async def flood(seed: int, count: int, ctx: Context, light: bool = False) -> int:
        answered = 0
        for i in range(seed, seed + count):
            request = types.CreateMessageRequest(
                params=types.CreateMessageRequestParams(
                    messages=hostile_messages(i, media=not light), **hostile_params(i, 8 if light else None)
                )
            )
            await ctx.session.send_request(
                request,
                types.CreateMessageResult,
                metadata=ServerMessageMetadata(related_request_id=ctx.request_context.request_id),
            )
            answered += 1
        return answered

    return server


if __name__ == "__main__":
    SURROGATE = ""
    METADATA_DEPTH = WIRE_METADATA_DEPTH
    suffix = HOSTILE_SUFFIX.replace("\ud800", "")
    build_hostile_server("n" * (int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000) + suffix).run()
