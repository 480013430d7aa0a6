"""`engram mcp` driven by the MCP SDK's own client over stdio: tools, schemas, scope, errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from engramdb import Memory

TOOLS = {"memory_add", "memory_search", "memory_list", "memory_get", "memory_update", "memory_delete",
         "memory_history", "memory_add_turn"}


async def session_run(db: Path, namespace: str, script) -> None:  # type: ignore[no-untyped-def]
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "engramdb.cli", "--db", str(db), "-n", namespace, "mcp"],
                                   env={"ENGRAM_EMBEDDER": "minilm"})
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            await script(session)


def call_json(result) -> dict:  # type: ignore[no-untyped-def]
    assert not result.is_error, result.content
    data = result.structured_content
    if data is None:
        data = json.loads(result.content[0].text)
    return data.get("result", data) if isinstance(data, dict) and set(data) == {"result"} else data


def test_mcp_tools_end_to_end(tmp_path: Path) -> None:
    db = tmp_path / "mcp.db"
    with Memory(db, namespace="bob", embedder="minilm") as mem:
        [bob_id] = mem.add(["Bob's private note about the vault."])
    seen: dict = {}

    async def script(session: ClientSession) -> None:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == TOOLS
        for tool in tools.values():  # the namespace is the server's, never an argument
            assert "namespace" not in tool.input_schema.get("properties", {}), tool.name
            assert tool.description
        added = call_json(await session.call_tool("memory_add", {"text": "Alice lives in Berlin.",
                                                                 "persons": ["Alice"]}))
        old = added["id"]
        moved = call_json(await session.call_tool("memory_add", {"text": "Alice moved to Lisbon.",
                                                                 "supersedes": [old]}))
        found = call_json(await session.call_tool("memory_search", {"q": "Where does Alice live?", "top_k": 3}))
        assert found["hits"][0]["id"] == moved["id"] and "score" in found["hits"][0]
        assert old not in {h["id"] for h in found["hits"]}
        # The chat messages as the query, as a JSON string (which the SDK parses) or as a list.
        messages = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Hi!"},
                    {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Where does Alice live?"}]
        for query in (json.dumps(messages), messages):
            chat = call_json(await session.call_tool("memory_search", {"query": query, "k": 3}))
            assert chat["hits"][0]["id"] == moved["id"], query
        updated = call_json(await session.call_tool("memory_update", {"id": moved["id"],
                                                                      "text": "Alice moved to Lisbon in 2024."}))
        assert updated["entry"]["text"].endswith("2024.")
        events = call_json(await session.call_tool("memory_history", {"id": moved["id"]}))["events"]
        assert [e["event"] for e in events] == ["ADD", "UPDATE"] and events[1]["actor"] == "mcp"
        turn = call_json(await session.call_tool("memory_add_turn", {"speaker": "Alice", "session_id": "s1",
                                                                     "text": "I adopted a cat yesterday.",
                                                                     "timestamp": "2024-03-14T10:00:00"}))
        assert turn["facts"] >= 1
        listed = call_json(await session.call_tool("memory_list", {"limit": 2}))
        assert len(listed["results"]) == 2 and listed["next_cursor"]
        # Scope: Bob's id does not exist here; errors come back as tool errors with Engram's message.
        got = call_json(await session.call_tool("memory_get", {"ids": [bob_id]}))
        assert got == {"entries": [], "missing": [bob_id]}
        refused = await session.call_tool("memory_delete", {"id": bob_id})
        assert refused.is_error and "not found in namespace 'alice'" in refused.content[0].text
        bad = await session.call_tool("memory_search", {"query": "x", "k": 0})
        assert bad.is_error and "k must be an integer" in bad.content[0].text
        # Argument mistakes: one line naming the argument; an argument no tool takes is refused.
        typed = await session.call_tool("memory_search", {"query": "x", "k": "abc"})
        assert typed.is_error and typed.content[0].text.startswith("memory_search: k: Input should be a valid integer")
        assert "\n" not in typed.content[0].text and "pydantic" not in typed.content[0].text
        for loose in ({"k": True}, {"k": "3"}, {"limit": "1"}, {"context": 1.5}):  # strict, as over HTTP
            coerced = await session.call_tool("memory_search", {"query": "x", **loose})
            assert coerced.is_error and coerced.content[0].text.startswith(f"memory_search: {next(iter(loose))}:")
        both = await session.call_tool("memory_search", {"query": "vault", "q": "other"})
        assert both.is_error and "query and q name the same argument" in both.content[0].text
        meta = await session.call_tool("memory_add", {"text": "x", "metadata": "notadict"})
        assert meta.is_error and meta.content[0].text.startswith("memory_add: metadata:")
        for extra in ({"bogus": 1}, {"namespace": "bob"}):
            refused = await session.call_tool("memory_search", {"query": "vault", **extra})
            assert refused.is_error and f"memory_search takes no argument {next(iter(extra))!r}" in \
                refused.content[0].text
        seen["ok"] = True

    anyio.run(session_run, db, "alice", script)
    assert seen["ok"]
    with Memory(db, namespace="bob") as mem:
        assert mem.get(bob_id)[0].text == "Bob's private note about the vault."
        assert mem.count(namespace="alice") >= 3  # Lisbon (updated), the cat turn and its facts
        assert mem.count(namespace="alice", include_superseded=True) == mem.count(namespace="alice") + 1
