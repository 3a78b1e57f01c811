"""openai request and response content in the GenAI semconv message shape (content capture only).

Called only when content capture is on (:mod:`otel_sampling.content`). Reads request bodies
(JSON) and responses (SDK models) alike (:func:`~otel_sampling.instrumentation.openai_fields.field`).

Chat Completions: every entry of ``messages`` is an input message, ``system`` / ``developer``
included (they are part of the chat history, not separate instructions); ``tool_calls`` become
``tool_call`` parts, a ``tool`` message a ``tool_call_response`` part. One output message per
choice. Responses API: ``instructions`` are the system instructions; ``input`` is one user
message (a string) or a list of items (messages, ``function_call`` -> an assistant ``tool_call``,
``function_call_output`` -> a ``tool`` message's ``tool_call_response``); the output items make
one assistant message (``reasoning`` summaries as ``reasoning`` parts). Other parts and items
(images, files...) are kept by their type only.
"""

from __future__ import annotations

from typing import Any

from otel_sampling.content import Content, generic_part, text_part
from otel_sampling.instrumentation.openai_fields import as_str, field

_TEXT_PARTS = frozenset({"text", "input_text", "output_text"})


def _parts(content: Any) -> list[dict[str, Any]]:
    """Parts of a message's ``content``: a string, or a list of typed parts."""
    if content is None:
        return []
    if isinstance(content, str):
        return [text_part(content)]
    parts = []
    for part in content:
        kind = field(part, "type")
        if kind in _TEXT_PARTS:
            parts.append(text_part(field(part, "text") or ""))
        else:
            parts.append(generic_part(kind))
    return parts


def _tool_call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}


def _chat_message(message: Any) -> dict[str, Any]:
    role = field(message, "role")
    if role == "tool":
        return {
            "role": "tool",
            "parts": [
                {
                    "type": "tool_call_response",
                    "id": field(message, "tool_call_id"),
                    "response": field(message, "content"),
                }
            ],
        }
    parts = _parts(field(message, "content"))
    for call in field(message, "tool_calls") or ():
        function = field(call, "function")
        parts.append(_tool_call(field(call, "id"), field(function, "name"), field(function, "arguments")))
    return {"role": role, "parts": parts}


def chat_input(body: Any) -> Content:
    """The input messages of a Chat Completions request body."""
    return Content(None, [_chat_message(m) for m in field(body, "messages") or ()])


def chat_output(completion: Any) -> list[Any]:
    """One output message per choice of a ``ChatCompletion``."""
    messages = []
    for choice in field(completion, "choices") or ():
        message = _chat_message(field(choice, "message"))
        message["role"] = "assistant"
        if isinstance(reason := field(choice, "finish_reason"), str):
            message["finish_reason"] = reason
        messages.append(message)
    return messages


def _item_message(item: Any) -> dict[str, Any]:
    kind = field(item, "type")
    if kind == "function_call":
        return {
            "role": "assistant",
            "parts": [_tool_call(field(item, "call_id"), field(item, "name"), field(item, "arguments"))],
        }
    if kind == "function_call_output":
        return {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": field(item, "call_id"), "response": field(item, "output")}],
        }
    role = field(item, "role")
    if kind in (None, "message") and role is not None:
        return {"role": role, "parts": _parts(field(item, "content"))}
    return {"role": role or "assistant", "parts": [generic_part(kind)]}


def responses_input(body: Any) -> Content:
    """System instructions and input messages of a Responses request body."""
    instructions = as_str(field(body, "instructions"))
    items = field(body, "input")
    if isinstance(items, str):
        messages = [{"role": "user", "parts": [text_part(items)]}]
    else:
        messages = [_item_message(i) for i in items or ()]
    return Content([text_part(instructions)] if instructions else None, messages)


def _output_parts(item: Any) -> list[dict[str, Any]]:
    kind = field(item, "type")
    if kind == "message":
        return _parts(field(item, "content"))
    if kind == "function_call":
        return [_tool_call(field(item, "call_id"), field(item, "name"), field(item, "arguments"))]
    if kind == "reasoning":
        return [{"type": "reasoning", "content": "".join(field(s, "text") or "" for s in field(item, "summary") or ())}]
    return [generic_part(kind)]


def responses_output(response: Any, finish_reasons: tuple[str, ...]) -> list[Any]:
    """The output items of a Responses ``Response`` as one assistant message."""
    message: dict[str, Any] = {
        "role": "assistant",
        "parts": [p for item in field(response, "output") or () for p in _output_parts(item)],
    }
    if finish_reasons:
        message["finish_reason"] = finish_reasons[0]
    return [message]
