"""`engram mcp` driven by the MCP SDK's own client over stdio: tools, schemas, scope, errors."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from engramdb import Memory

TOOLS = {"memory_add", "memory_search", "memory_list", "memory_get", "memory_update", "memory_delete",
         "memory_history", "memory_add_turn", "memory_namespaces", "memory_sessions", "memory_timeline"}


async def session_run(db: Path, namespace: str, script, *options: str,  # type: ignore[no-untyped-def]
                      errlog=None) -> None:
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "engramdb.cli", "--db", str(db), "-n", namespace, "mcp", *options],
                                   env={"ENGRAM_EMBEDDER": "minilm"})
    async with stdio_client(params, errlog=errlog or sys.stderr) as streams:
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
        turn_events = call_json(await session.call_tool("memory_history", {"id": turn["id"]}))["events"]
        assert [(e["event"], e["actor"]) for e in turn_events] == [("ADD", "mcp")]
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
        twice = await session.call_tool("memory_get", {"ids": [bob_id], "id": bob_id})  # it listed the entry twice
        assert twice.is_error and "ids and id name the same argument" in twice.content[0].text
        meta = await session.call_tool("memory_add", {"text": "x", "metadata": "notadict"})
        assert meta.is_error and meta.content[0].text.startswith("memory_add: metadata:")
        for extra in ({"bogus": 1}, {"namespace": "bob"}):
            refused = await session.call_tool("memory_search", {"query": "vault", **extra})
            assert refused.is_error and f"memory_search: no argument {next(iter(extra))!r}" in \
                refused.content[0].text
        seen["final"] = call_json(await session.call_tool("memory_search", {"query": "Where does Alice live?", "k": 5}))
        seen["ok"] = True

    anyio.run(session_run, db, "alice", script)
    assert seen["ok"]
    with Memory(db, namespace="bob") as mem:
        assert mem.get(bob_id)[0].text == "Bob's private note about the vault."
        # Scores as the CLI's --json and HTTP give them (6 decimals; 4 made near-ties equal).
        library = mem.search("Where does Alice live?", k=5, namespace="alice")
        assert [(h["id"], h["score"]) for h in seen["final"]["hits"]] == [(h.id, round(h.score, 6)) for h in library]
        assert mem.count(namespace="alice") >= 3  # Lisbon (updated), the cat turn and its facts
        assert mem.count(namespace="alice", include_superseded=True) == mem.count(namespace="alice") + 1


def test_mcp_update_takes_what_the_http_update_takes_and_clears_fields(tmp_path: Path) -> None:
    """memory_update changes every field PATCH /v1/memories/{id} does, and `clear` empties one
    (an expiry removed, tags or metadata cleared), which null cannot (null leaves it as it is);
    memory_search returns 10 hits when no k is given, as the HTTP search does."""
    from engramdb.server.models import UpdateRequest

    db = tmp_path / "update.db"
    with Memory(db, namespace="me", embedder="minilm") as mem:
        mem.add([f"Note {i} about green tea." for i in range(12)])

    async def script(session: ClientSession) -> None:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        takes = set(tools["memory_update"].input_schema["properties"])
        assert takes == set(UpdateRequest.model_fields) - {"actor"} | {"id", "clear"}  # actor: "mcp"
        clear = tools["memory_update"].input_schema["properties"]["clear"]
        names = next(option["items"]["enum"] for option in clear["anyOf"] if option.get("type") == "array")
        assert set(names) == set(UpdateRequest.model_fields) - {"actor", "text"}
        added = call_json(await session.call_tool("memory_add", {
            "text": "The parking pass is in the glovebox.", "persons": ["Ann"], "keywords": ["car"],
            "metadata": {"project": "atlas"}, "expires_at": "2099-01-01T00:00:00"}))
        entry_id = added["id"]

        async def stored() -> dict:  # type: ignore[type-arg]
            return call_json(await session.call_tool("memory_get", {"id": entry_id}))["entries"][0]

        call_json(await session.call_tool("memory_update", {
            "id": entry_id, "entities": ["glovebox"], "location": "Lisbon", "topic": "car",
            "timestamp": "2024-05-01T00:00:00", "timestamp_end": "2024-06-01T00:00:00"}))
        entry = await stored()
        assert (entry["entities"], entry["location"], entry["topic"]) == (["glovebox"], "Lisbon", "car")
        assert entry["timestamp_end"].startswith("2024-06-01") and entry["expires_at"].startswith("2099")
        nulls = call_json(await session.call_tool("memory_update", {"id": entry_id, "text": "The parking pass is "
                                                                    "in the car.", "expires_at": None}))
        assert nulls["entry"]["expires_at"].startswith("2099")  # null: left as it is
        cleared = call_json(await session.call_tool("memory_update", {
            "id": entry_id, "clear": ["expires_at", "persons", "keywords", "metadata", "location"]}))
        assert "expires_at" not in cleared["entry"]
        entry = await stored()
        assert entry["expires_at"] is None and entry["persons"] == entry["keywords"] == [] and entry["metadata"] == {}
        assert entry["location"] is None and entry["topic"] == "car" and entry["text"].endswith("in the car.")
        both = await session.call_tool("memory_update", {"id": entry_id, "topic": "x", "clear": ["topic"]})
        assert both.is_error and "topic" in both.content[0].text
        text = await session.call_tool("memory_update", {"id": entry_id, "clear": ["text"]})
        assert text.is_error and text.content[0].text.startswith("memory_update: clear")
        found = call_json(await session.call_tool("memory_search", {"query": "green tea"}))
        assert len(found["hits"]) == 10

    anyio.run(session_run, db, "me", script)


def test_mcp_namespaces_sessions_and_timeline_stay_in_the_bound_namespace(tmp_path: Path) -> None:
    """memory_namespaces, memory_sessions and memory_timeline answer what GET /v1/namespaces,
    /v1/sessions and /v1/timeline answer, within the namespace `engram -n alice mcp` serves:
    Bob's namespace, sessions and dates never show."""
    from engramdb.schema import to_wire

    db = tmp_path / "views.db"
    with Memory(db, namespace="alice", embedder="minilm") as mem:
        mem.add([{"text": "Alice moved to Lisbon.", "timestamp": "2023-05-02"},
                 {"text": "Alice adopted a cat.", "timestamp": "2024-03-10"}])
        mem.add_conversation([("Alice", "I flew to Oslo yesterday."), ("Carol", "How was it?")], session_id="trip",
                             session_time="2024-03-14T10:00:00")
        mem.add([{"text": "Bob's secret plan.", "timestamp": "1999-01-01"}], namespace="bob")
        mem.add_conversation([("Bob", "Meet at noon.")], session_id="bob-chat", namespace="bob")
        expected = {"namespaces": to_wire("namespace", [r for r in mem.namespaces() if r["namespace"] == "alice"]),
                    "sessions": to_wire("session", mem.sessions(namespace="alice")),
                    "timeline": to_wire("timeline", mem.timeline(namespace="alice", field="event", bucket="month")),
                    "facts": to_wire("timeline", mem.timeline(namespace="alice", filters={"kind": "fact"}))}
    seen: dict = {}

    async def script(session: ClientSession) -> None:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        for name in ("memory_namespaces", "memory_sessions", "memory_timeline"):
            assert tools[name].output_schema and "namespace" not in tools[name].input_schema.get("properties", {})
        assert set(tools["memory_timeline"].input_schema["properties"]) == {
            "field", "bucket", "filters", "include_superseded", "show_expired"}
        seen["namespaces"] = call_json(await session.call_tool("memory_namespaces", {}))
        seen["sessions"] = call_json(await session.call_tool("memory_sessions", {}))
        seen["timeline"] = call_json(await session.call_tool("memory_timeline", {"field": "event", "bucket": "month"}))
        seen["facts"] = call_json(await session.call_tool("memory_timeline", {"filters": {"kind": "fact"}}))
        bad = await session.call_tool("memory_timeline", {"bucket": "decade"})
        assert bad.is_error and bad.content[0].text.startswith("memory_timeline: bucket:")
        wrong = await session.call_tool("memory_sessions", {"limit": 0})
        assert wrong.is_error and "limit must be an integer from 1 to 1000" in wrong.content[0].text

    anyio.run(session_run, db, "alice", script)
    assert seen["namespaces"] == {"namespaces": expected["namespaces"]}
    assert [r["namespace"] for r in seen["namespaces"]["namespaces"]] == ["alice"]
    assert seen["sessions"] == {"sessions": expected["sessions"]}
    assert [s["session_id"] for s in seen["sessions"]["sessions"]] == ["trip"]
    assert seen["timeline"] == expected["timeline"] and seen["timeline"]["first"].startswith("2023-05")
    assert seen["facts"] == expected["facts"] and "bob" not in json.dumps(seen).lower()


def test_mcp_null_is_not_given_for_every_optional_argument(tmp_path: Path) -> None:
    """A client that sends every property, null for those it does not mean (strict tool calling),
    gets each tool's defaults: null is never refused for an optional argument."""
    db = tmp_path / "nulls.db"
    with Memory(db, namespace="me", embedder="minilm") as mem:
        [note] = mem.add(["Ann keeps a cat called Tom."])
        mem.add_turn("Ann", "I walked Tom today.", session_id="s", timestamp="2024-03-14T10:00:00", namespace="me")
    given = {"memory_search": {"query": "cat"}, "memory_add": {"text": "Ann likes tea."},
             "memory_get": {"id": note}, "memory_update": {"id": note, "topic": "pets"},
             "memory_history": {"id": note}, "memory_add_turn": {"speaker": "Ann", "text": "Tom sleeps a lot.",
                                                                 "session_id": "s"}}

    async def script(session: ClientSession) -> None:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        for name, tool in sorted(tools.items()):
            if name == "memory_delete":
                continue
            arguments = {p: None for p in tool.input_schema.get("properties", {})} | given.get(name, {})
            result = await session.call_tool(name, arguments)
            assert not result.is_error, (name, result.content)
        deleted = await session.call_tool("memory_delete", {"id": note})
        assert not deleted.is_error
        missing = await session.call_tool("memory_add", {"text": None})
        assert missing.is_error and "text" in missing.content[0].text

    anyio.run(session_run, db, "me", script)


def test_mcp_tool_schemas_describe_every_argument_and_every_result(tmp_path: Path) -> None:
    """What a model reads in tools/list: every tool declares its output (never an empty object
    schema), every argument has a description, `filters` names its keys, memory_search has one
    name per argument (the aliases a lenient client may send still work, unpublished), and
    every structured result validates against its tool's output schema."""
    import jsonschema

    from engramdb.store.base import FILTER_KEYS

    db = tmp_path / "schemas.db"
    with Memory(db, namespace="me", embedder="minilm") as mem:
        [note] = mem.add(["Ann keeps a cat called Tom."])
    seen: dict = {}

    async def script(session: ClientSession) -> None:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        for name, tool in tools.items():
            assert tool.output_schema and tool.output_schema.get("properties"), name
            assert tool.output_schema.get("additionalProperties") is not True, name
            for argument, spec in tool.input_schema.get("properties", {}).items():
                assert spec.get("description"), (name, argument)
        for name in ("memory_search", "memory_list", "memory_timeline"):
            described = tools[name].input_schema["properties"]["filters"]["description"]
            assert all(key.split(".")[0] in described for key in FILTER_KEYS), (name, described)
        assert set(tools["memory_search"].input_schema["properties"]) == {"query", "k", "filters", "now", "context"}
        assert tools["memory_search"].input_schema["required"] == ["query"]  # a search needs one (q may stand in)
        assert "turn_id" in tools["memory_add_turn"].input_schema["properties"]
        calls = {"memory_search": {"query": "cat", "context": 1}, "memory_add": {"text": "Ann likes tea."},
                 "memory_list": {}, "memory_get": {"ids": [note, "nope"]}, "memory_history": {"id": note},
                 "memory_update": {"id": note, "topic": "pets"},
                 "memory_add_turn": {"speaker": "Ann", "text": "Tom sleeps a lot.", "session_id": "s"},
                 "memory_namespaces": {}, "memory_sessions": {}, "memory_timeline": {}}
        for name, arguments in calls.items():
            result = await session.call_tool(name, arguments)
            assert not result.is_error, (name, result.content)
            jsonschema.validate(result.structured_content, tools[name].output_schema)
        deleted = await session.call_tool("memory_delete", {"id": note})
        jsonschema.validate(deleted.structured_content, tools["memory_delete"].output_schema)
        for aliased in ({"q": "cat", "top_k": 1}, {"query": "cat", "limit": 1}):  # accepted, not published
            assert len(call_json(await session.call_tool("memory_search", aliased))["hits"]) == 1
        seen["ok"] = True

    anyio.run(session_run, db, "me", script)
    assert seen["ok"]


def test_mcp_add_turn_returns_its_turn_id_and_takes_one_to_correct_it(tmp_path: Path) -> None:
    """memory_add_turn answers as POST /v1/conversations/{session}/turns does (turns, unchanged,
    facts, written, removed) plus the turn's turn_id and entry id; a retry is told apart from
    a turn without facts, and the turn_id corrects that turn."""
    db = tmp_path / "turns.db"

    async def script(session: ClientSession) -> None:
        first = call_json(await session.call_tool("memory_add_turn", {
            "speaker": "Ann", "text": "I adopted a cat yesterday.", "session_id": "s",
            "timestamp": "2024-03-14T10:00:00"}))
        assert first["session_id"] == "s" and first["turns"] == 1 and first["unchanged"] == 0
        assert first["turn_id"] and first["id"] and first["written"] >= 1
        quiet = call_json(await session.call_tool("memory_add_turn", {"speaker": "Bo", "text": "Hm.",
                                                                      "session_id": "s"}))
        assert quiet["turns"] == 1 and quiet["turn_id"] != first["turn_id"]
        again = call_json(await session.call_tool("memory_add_turn", {"speaker": "Bo", "text": "Hm.",
                                                                      "session_id": "s"}))
        assert again["turns"] == 0 and again["unchanged"] == 1 and again["written"] == 0
        assert again["turn_id"] == quiet["turn_id"] and again["id"] == quiet["id"]
        fixed = call_json(await session.call_tool("memory_add_turn", {
            "speaker": "Ann", "text": "I adopted a dog yesterday.", "session_id": "s",
            "turn_id": first["turn_id"]}))
        assert fixed["turn_id"] == first["turn_id"] and fixed["turns"] == 1 and fixed["removed"] >= 1
        stored = call_json(await session.call_tool("memory_get", {"id": fixed["id"]}))["entries"][0]
        assert stored["text"].endswith("I adopted a dog yesterday.") and stored["source"]["turn_id"] == \
            first["turn_id"]
        text = (await session.call_tool("memory_add_turn", {"speaker": "Ann", "text": "I adopted a dog yesterday.",
                                                            "session_id": "s", "turn_id": first["turn_id"]}))
        assert "retry" in text.content[0].text and first["turn_id"] in text.content[0].text

    anyio.run(session_run, db, "me", script)


def test_mcp_result_text_is_short_and_readable(tmp_path: Path) -> None:
    """The text block is a few readable lines (the data is the structured content): not the
    result as JSON, and a hit's text appears once, with its id."""
    db = tmp_path / "text.db"
    with Memory(db, namespace="me", embedder="minilm") as mem:
        ids = mem.add(["Ann keeps a cat called Tom.", "Ann's cat Tom is ginger."])

    async def script(session: ClientSession) -> None:
        found = await session.call_tool("memory_search", {"query": "Ann's cat"})
        text = found.content[0].text
        assert not text.lstrip().startswith("{") and len(found.content) == 1
        for entry_id, said in zip(ids, ["Ann keeps a cat called Tom.", "Ann's cat Tom is ginger."]):
            assert text.count(said) == 1 and f"[{entry_id}]" in text
        for name, arguments in (("memory_list", {}), ("memory_get", {"id": ids[0]}), ("memory_namespaces", {}),
                                ("memory_history", {"id": ids[0]}), ("memory_timeline", {}),
                                ("memory_sessions", {})):
            result = await session.call_tool(name, arguments)
            said = result.content[0].text
            assert not said.lstrip().startswith(("{", "[{")) and len(said) < 400, (name, said)

    anyio.run(session_run, db, "me", script)


def test_mcp_errors_read_tool_colon_message(tmp_path: Path) -> None:
    """Every tool error is one line `<tool>: <message>`, whether Engram, the SDK or the argument
    checks found it: no 'Error executing tool' prefix, a tool without arguments says so, and
    an empty or mistyped speaker is named as such (not as missing, nor as a 'role' it does not
    take)."""
    db = tmp_path / "errors.db"
    cases = [("memory_delete", {"id": "nope"}, "memory_delete: not found in namespace 'me': nope"),
             ("memory_search", {"query": "x", "now": "yesterday"}, "memory_search: now 'yesterday' is not ISO 8601"),
             ("memory_get", {}, "memory_get: give ids"),
             ("memory_namespaces", {"x": 1}, "memory_namespaces: no argument 'x'; it takes no arguments"),
             ("memory_add", {"text": "x", "bogus": 1}, "memory_add: no argument 'bogus'; it takes text, persons"),
             ("memory_add", {}, "memory_add: text: required"),
             ("memory_add_turn", {"speaker": "", "text": "x", "session_id": "s"},
              "memory_add_turn: speaker must be a non-empty string"),
             ("memory_add_turn", {"speaker": 5, "text": "x", "session_id": "s"},
              "memory_add_turn: speaker: Input should be a valid string"),
             # A query that is not text nor chat messages that say something is refused, never
             # searched as the literal "[]" (which found hits with confident scores).
             ("memory_search", {"query": []}, "memory_search: give the question as query"),
             ("memory_search", {"query": [{"role": "user"}]}, "memory_search: query: no message in it says anything"),
             ("memory_search", {"query": [{"role": "system", "content": "Be brief."}]},
              "memory_search: query: no message in it says anything"),
             ("memory_search", {"query": 5}, "memory_search: query: Input should be a valid string"),
             ("memory_search", {"query": {"role": "user", "content": "x"}},
              "memory_search: query: Input should be a valid string")]

    async def script(session: ClientSession) -> None:
        for name, arguments, expected in cases:
            result = await session.call_tool(name, arguments)
            said = result.content[0].text
            assert result.is_error and said.startswith(expected) and "\n" not in said, (name, said)
            assert "Error executing" not in said and ("role" not in said or name == "memory_search"), said

    log = tmp_path / "stderr.log"
    with log.open("w") as errlog:
        anyio.run(functools.partial(session_run, errlog=errlog), db, "me", script)
    # Each mistake is one line of the server's stderr (not rich's wrapped, time-columned form).
    lines = log.read_text().splitlines()
    for name, _, expected in cases:
        assert any(expected in line and line.split()[2] == "INFO" for line in lines), (expected, lines)
    assert all(" INFO " in line or " WARNING " in line for line in lines), lines


def test_mcp_stdio_caps_k_as_the_server_does(tmp_path: Path) -> None:
    """`engram mcp` limits k as `engram serve` does (--max-k, 100 by default), so a k that works
    over stdio works over /mcp; --max-k raises it up to the library's 1,000."""
    db = tmp_path / "k.db"
    with Memory(db, namespace="me", embedder="minilm") as mem:
        mem.add(["Ann keeps a cat called Tom."])
    seen: dict = {}

    async def default(session: ClientSession) -> None:
        capped = await session.call_tool("memory_search", {"query": "cat", "k": 500})
        seen["default"] = capped.content[0].text
        assert len(call_json(await session.call_tool("memory_search", {"query": "cat", "k": 100}))["hits"]) == 1

    async def raised(session: ClientSession) -> None:
        seen["raised"] = call_json(await session.call_tool("memory_search", {"query": "cat", "k": 500}))["hits"]
        over = await session.call_tool("memory_search", {"query": "cat", "k": 1001})
        seen["over"] = over.content[0].text

    anyio.run(session_run, db, "me", default)
    anyio.run(session_run, db, "me", raised, "--max-k", "1000")
    assert "k must be an integer from 1 to 100 here, not 500" in seen["default"]
    assert len(seen["raised"]) == 1 and "from 1 to 1000 here" in seen["over"]
