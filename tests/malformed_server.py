"""A raw MCP server over stdio (no SDK: it writes JSON-RPC lines itself) whose sampling requests mcp
must reject: run as ``python malformed_server.py``.

It answers ``initialize`` (the legacy handshake) or ``server/discover`` (2026-07-28; serverInfo
``malformed-server`` either way), ``tools/list`` and ``tools/call`` of its one tool ``ask(kind)``,
which asks for one ``sampling/createMessage`` with the params ``MALFORMED[kind]`` (``valid``: a
well-formed one) and returns the host's answer as the tool's text (the JSON of the ``result`` or
``error`` member). Legacy: a JSON-RPC request to the host; 2026-07-28: an ``input_required``
result embedding it, answered by the host's retry.
"""

import json
import sys

NAME = "malformed-server"
MODERN = "2026-07-28"
MESSAGE = {"role": "user", "content": {"type": "text", "text": "hi"}}
VALID = {"messages": [MESSAGE], "maxTokens": 10}
# kind -> params, and the pydantic error type mcp's parse reports first for them.
MALFORMED = {
    "valid": (VALID, None),
    "no_max_tokens": ({"messages": [MESSAGE]}, "missing"),
    "max_tokens_text": ({**VALID, "maxTokens": "ten"}, "int_parsing"),
    "messages_not_a_list": ({**VALID, "messages": "hi"}, "list_type"),
}


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    modern = False
    asked: dict[str, object] = {}  # sampling request id -> the tools/call id waiting for its answer
    for line in sys.stdin:
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        if method is None and ident in asked:  # the host's answer to our sampling request
            answer = message.get("result", message.get("error"))
            content = [
                {"type": "text", "text": json.dumps({"error": message["error"]} if "error" in message else answer)}
            ]
            send({"jsonrpc": "2.0", "id": asked.pop(ident), "result": {"content": content, "isError": False}})
        elif method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": NAME, "version": "1.0"},
            }
            send({"jsonrpc": "2.0", "id": ident, "result": result})
        elif method == "server/discover":  # the 2026-07-28 handshake
            result = {
                "supportedVersions": [MODERN],
                "capabilities": {"tools": {}},
                "resultType": "complete",
                "cacheScope": "private",
                "ttlMs": 0,
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": NAME, "version": "1.0"}},
            }
            send({"jsonrpc": "2.0", "id": ident, "result": result})
            modern = True
        elif method == "tools/list":
            schema = {"type": "object", "properties": {"kind": {"type": "string"}}, "required": ["kind"]}
            result = {"tools": [{"name": "ask", "inputSchema": schema}]}
            if modern:
                result.update(resultType="complete", cacheScope="private", ttlMs=0)
            send({"jsonrpc": "2.0", "id": ident, "result": result})
        elif method == "tools/call" and modern:  # the sampling request inside an input_required result
            arguments = message["params"]["arguments"]
            responses = (message["params"].get("inputResponses") or {}).get("s")
            if responses is not None:
                content = [{"type": "text", "text": json.dumps(responses)}]
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": ident,
                        "result": {"content": content, "isError": False, "resultType": "complete"},
                    }
                )
                continue
            request = {"method": "sampling/createMessage", "params": MALFORMED[arguments["kind"]][0]}
            result = {"resultType": "input_required", "inputRequests": {"s": request}}
            send({"jsonrpc": "2.0", "id": ident, "result": result})
        elif method == "tools/call":
            request_id = f"s-{len(asked)}-{ident}"
            asked[request_id] = ident
            params = MALFORMED[message["params"]["arguments"]["kind"]][0]
            send({"jsonrpc": "2.0", "id": request_id, "method": "sampling/createMessage", "params": params})
        elif ident is not None:
            send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
