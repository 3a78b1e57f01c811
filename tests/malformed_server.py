"""A raw MCP server over stdio (no SDK: it writes JSON-RPC lines itself) whose sampling requests mcp
must reject: run as ``python malformed_server.py``.

It answers ``initialize`` (the legacy handshake, serverInfo ``malformed-server``), ``tools/list``
and ``tools/call`` of its one tool ``ask(kind)``: the call sends one ``sampling/createMessage``
request with the params ``MALFORMED[kind]`` (``valid``: a well-formed one), waits for the host's
answer, and returns it as the tool's text (the JSON of the ``result`` or ``error`` member).
"""

import json
import sys

NAME = "malformed-server"
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
        elif method == "tools/list":
            schema = {"type": "object", "properties": {"kind": {"type": "string"}}, "required": ["kind"]}
            send({"jsonrpc": "2.0", "id": ident, "result": {"tools": [{"name": "ask", "inputSchema": schema}]}})
        elif method == "tools/call":
            request_id = f"s-{len(asked)}-{ident}"
            asked[request_id] = ident
            params = MALFORMED[message["params"]["arguments"]["kind"]][0]
            send({"jsonrpc": "2.0", "id": request_id, "method": "sampling/createMessage", "params": params})
        elif ident is not None:
            send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
