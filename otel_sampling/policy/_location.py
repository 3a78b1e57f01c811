"""Where a key is in a policy file: its dotted spelling for messages, and its line.

A key path is a tuple of table keys (``str``) and array indexes (``int``), as the loader walks the
parsed document: ``("servers", "wiki", "permitted_models", 1)``.

``tomllib`` reports no positions for what it parsed, so :func:`key_line` searches the text: each
line that is a table header or a ``key = ...`` is handed to ``tomllib`` on its own (a ``key =``
line with its value replaced by ``0``), which reads the key path it defines, with TOML's own
quoting and escapes. Lines inside multi-line strings that look like keys are taken as keys too.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

KeyPath = tuple[Any, ...]  # str parts, plus int parts for array indexes


def format_key(key: KeyPath) -> str:
    """``("servers", "wiki", "permitted_models", 0)`` -> ``servers."wiki".permitted_models[0]``.

    A name chosen by the operator (a server, run, model or host name: the second part of every
    table but ``[default]``; a tool name after ``servers."<name>".tools``) is always quoted as a
    JSON string, with anything still unprintable escaped: the key stays one readable line.
    """
    text = ""
    for position, part in enumerate(key):
        if isinstance(part, int):
            text += f"[{part}]"
        elif (position == 1 and key[0] != "default") or (position == 3 and key[0] == "servers" and key[2] == "tools"):
            text += "." + _quote(part)
        else:
            text += ("." if text else "") + part
    return text


def _quote(name: str) -> str:
    quoted = json.dumps(name, ensure_ascii=False)
    if quoted.isprintable():
        return quoted
    return "".join(ch if ch.isprintable() else json.dumps(ch)[1:-1] for ch in quoted)


def key_line(text: str, key: KeyPath) -> int | None:
    """The 1-based line of *text* that defines *key* (or a table or key inside it); else the line
    of its nearest enclosing header or dotted key (a missing key: its table's header; a value in
    an inline table: the key that opens it); else ``None``."""
    enclosing: int | None = None
    depth = 0
    for path, number in _definitions(text):
        if path[: len(key)] == key:
            return number
        if len(path) > depth and key[: len(path)] == path:
            enclosing, depth = number, len(path)
    return enclosing


def _definitions(text: str) -> Iterator[tuple[KeyPath, int]]:
    """Each table header and ``key =`` line, as (full key path, line number): a key's path is its
    table's plus its own dotted key; an ``[[array]]`` entry's path ends with its index."""
    table: KeyPath = ()
    entries: dict[KeyPath, int] = {}  # [[array]] entries seen so far, per array
    for number, line in enumerate(text.split("\n"), start=1):  # TOML lines end at "\n" only
        stripped = line.strip(" \t\r")
        if stripped.startswith("["):
            header = _parsed_key(stripped)
            if header is None:
                continue
            if stripped.startswith("[["):
                entries[header] = entries.get(header, -1) + 1
                header = (*header, entries[header])
            table = header
            yield header, number
        elif not stripped.startswith("#"):
            # The "=" that ends the key is the first one with a whole key before it ("=" may
            # appear inside a quoted key).
            for index in (i for i, char in enumerate(stripped) if char == "="):
                key = _parsed_key(stripped[:index] + "= 0")
                if key is not None:
                    yield (*table, *key), number
                    break


def _parsed_key(snippet: str) -> KeyPath | None:
    """The key path a one-line TOML document defines (``[a."b"]`` -> ``("a", "b")``,
    ``a.b = 0`` -> ``("a", "b")``), or ``None`` when *snippet* is not TOML on its own."""
    try:
        node: Any = tomllib.loads(snippet)
    except tomllib.TOMLDecodeError:
        return None
    path: list[str] = []
    while isinstance(node, dict) and len(node) == 1:
        ((name, node),) = node.items()
        path.append(name)
    return tuple(path) or None
