"""The MCP tools mounted at /mcp of `engram serve`, driven by the SDK's own streamable-HTTP
client over a real loopback socket: the same API keys, roles and namespaces as the HTTP API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Awaitable, Callable

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from test_mcp import TOOLS, call_json
from test_server import Running

Script = Callable[[ClientSession], Awaitable[None]]


@pytest.fixture()
def server(tmp_path: Path):
    running = Running(tmp_path / "mcp_http.db")
    yield running
    running.stop()


def run_session(url: str, key: str | None, script: Script, **headers: str) -> None:
    if key:
        headers["Authorization"] = f"Bearer {key}"

    async def main() -> None:
        async with create_mcp_http_client(headers=headers) as client:
            async with streamable_http_client(f"{url}/mcp", http_client=client) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    await script(session)

    anyio.run(main)


def test_mcp_over_http_with_keys_and_isolation(server: Running) -> None:
    alice_w, _ = server.keys.create(["alice"], "write")
    alice_r, _ = server.keys.create(["alice"], "read")
    bob_w, _ = server.keys.create(["bob"], "write")
    seen: dict[str, Any] = {}

    async def bob_script(session: ClientSession) -> None:
        seen["bob_id"] = call_json(await session.call_tool("memory_add", {"text": "Bob hides the key under the mat."}))[
            "id"]

    async def alice_script(session: ClientSession) -> None:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == TOOLS
        assert all("namespace" not in t.input_schema.get("properties", {}) for t in tools.values())
        assert "ctx" not in tools["memory_search"].input_schema.get("properties", {})
        added = call_json(await session.call_tool("memory_add", {"text": "Alice lives in Berlin.",
                                                                 "persons": ["Alice"]}))
        moved = call_json(await session.call_tool("memory_add", {"text": "Alice moved to Lisbon.",
                                                                 "supersedes": [added["id"]]}))
        found = call_json(await session.call_tool("memory_search", {"query": "Where does Alice live?", "limit": 3}))
        assert found["hits"][0]["id"] == moved["id"]
        capped = await session.call_tool("memory_search", {"query": "Alice", "k": 500})  # the server's --max-k
        assert capped.is_error and "k must be an integer from 1 to 100 here, not 500" in capped.content[0].text
        updated = call_json(await session.call_tool("memory_update", {"id": moved["id"],
                                                                      "text": "Alice moved to Lisbon in 2024."}))
        assert updated["entry"]["text"].endswith("2024.")
        # Isolation: Bob's entry is invisible and untouchable from Alice's key.
        hidden = call_json(await session.call_tool("memory_search", {"q": "key under the mat", "k": 10}))
        assert seen["bob_id"] not in {h["id"] for h in hidden["hits"]}
        assert "Bob" not in json.dumps(hidden)
        assert call_json(await session.call_tool("memory_get", {"id": seen["bob_id"]}))["missing"] == [seen["bob_id"]]
        refused = await session.call_tool("memory_delete", {"id": seen["bob_id"]})
        assert refused.is_error and "not found in namespace 'alice'" in refused.content[0].text
        assert call_json(await session.call_tool("memory_delete", {"id": added["id"]})) == {"deleted": 1}
        seen["alice_id"] = moved["id"]

    async def reader_script(session: ClientSession) -> None:
        listed = call_json(await session.call_tool("memory_list", {"limit": 10}))
        assert [e["id"] for e in listed["results"]] == [seen["alice_id"]]
        refused = await session.call_tool("memory_add", {"text": "A reader cannot write."})
        assert refused.is_error and "role is 'read'; memory_add needs 'write'" in refused.content[0].text
        history = call_json(await session.call_tool("memory_history", {"id": seen["alice_id"]}))
        assert [e["event"] for e in history["events"]] == ["ADD", "UPDATE"]

    run_session(server.url, bob_w, bob_script)
    run_session(server.url, alice_w, alice_script)
    run_session(server.url, alice_r, reader_script)
    assert server.memory.count(namespace="bob") == 1
    assert server.memory.get(seen["bob_id"], namespace="bob")[0].text == "Bob hides the key under the mat."
    assert server.memory.count(namespace="alice") == 1  # Lisbon; Berlin was deleted


def test_mcp_endpoint_refuses_requests_without_a_valid_key(server: Running) -> None:
    server.keys.create(["alice"], "write")
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for extra in ({}, {"Authorization": "Bearer eg_wrong"}):
            response = http.post("/mcp", json=body, headers=headers | extra)
            assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"
            assert response.json()["error"]["code"] == "unauthorized"
    writer, _ = server.keys.create(["alice"], "write")
    with httpx.Client(base_url=server.url, timeout=30) as http:
        wrong_ns = http.post("/mcp", json=body, headers=headers | {"Authorization": f"Bearer {writer}",
                                                                   "X-Engram-Namespace": "bob"})
        assert wrong_ns.status_code == 403


def test_mcp_open_refuses_other_hosts_and_keyed_accepts_a_proxy_name(server: Running) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with httpx.Client(base_url=server.url, timeout=30) as http:
        assert http.post("/mcp", json=body, headers=headers).status_code == 200
        for bad in ({"Host": "attacker.example"}, {"Origin": "http://attacker.example"}, {"Origin": "null"}):
            refused = http.post("/mcp", json=body, headers=headers | bad)
            assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden", bad
        secret, _ = server.keys.create(["alice"], "read")
        proxied = http.post("/mcp", json=body, headers=headers | {"Host": "memory.example.org",
                                                                  "Authorization": f"Bearer {secret}"})
        assert proxied.status_code == 200 and "memory_search" in proxied.text


def test_mcp_over_http_on_an_open_loopback_server_uses_the_named_namespace(server: Running) -> None:
    async def script(session: ClientSession) -> None:
        call_json(await session.call_tool("memory_add", {"text": "Carol's open note."}))

    run_session(server.url, None, script, **{"X-Engram-Namespace": "carol"})
    run_session(server.url, None, script)
    assert server.memory.count(namespace="carol") == 1
    assert server.memory.count(namespace="default") == 1


def test_engram_serve_as_a_user_runs_it(tmp_path: Path) -> None:
    """`engram keys create` then `engram serve` in a process of its own: the key works for the
    HTTP API and for MCP at /mcp, and the server stops on SIGTERM."""
    import os
    import signal
    import socket
    import subprocess
    import sys
    import time

    db = str(tmp_path / "served.db")
    env = {**os.environ, "ENGRAM_EMBEDDER": "minilm"}
    created = subprocess.run([sys.executable, "-m", "engramdb.cli", "--db", db, "keys", "create",
                              "--namespace", "alice", "--role", "write"], env=env, capture_output=True, text=True)
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip().splitlines()[-1]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    served = subprocess.Popen([sys.executable, "-m", "engramdb.cli", "--db", db, "serve", "--port", str(port)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        auth = {"Authorization": f"Bearer {key}"}
        added = httpx.post(f"{url}/v1/memories", json={"text": "Alice moved to Lisbon."}, headers=auth, timeout=60)
        assert added.status_code == 200, added.text
        assert httpx.post(f"{url}/v1/memories/search", json={"query": "x"}, timeout=60).status_code == 401

        async def script(session: ClientSession) -> None:
            found = call_json(await session.call_tool("memory_search", {"query": "Where does Alice live?"}))
            assert found["hits"][0]["text"] == "Alice moved to Lisbon."

        run_session(url, key, script)
    finally:
        served.send_signal(signal.SIGTERM)
        served.wait(timeout=60)
    # uvicorn re-raises SIGTERM after its graceful shutdown; the store was closed by then
    # (the last connection's close checkpoints and removes the WAL file).
    assert served.returncode in (0, -signal.SIGTERM), served.stderr.read() if served.stderr else ""
    assert not Path(db + "-wal").exists()
    assert "Application shutdown complete" in (served.stderr.read() if served.stderr else "")


def test_mcp_search_default_k_is_the_http_default_capped_by_max_k(tmp_path: Path) -> None:
    """Without k, memory_search returns as many hits as POST /v1/memories/search: 10, or the
    server's --max-k when that is lower."""
    from engramdb.server.app import Limits

    for max_k, expected in ((100, 10), (3, 3)):
        running = Running(tmp_path / f"k{max_k}.db", Limits(max_k=max_k))
        try:
            with running.client() as http:
                http.post("/v1/memories", json={"entries": [f"Note {i} about green tea." for i in range(12)]})
                over_http = http.post("/v1/memories/search", json={"query": "green tea"}).json()["hits"]
            seen: dict[str, int] = {}

            async def script(session: ClientSession) -> None:
                seen["hits"] = len(call_json(await session.call_tool("memory_search", {"query": "green tea"}))["hits"])

            run_session(running.url, None, script)
            assert seen["hits"] == len(over_http) == expected, (max_k, seen, len(over_http))
        finally:
            running.stop()


def test_mcp_namespaces_sessions_and_timeline_answer_what_http_answers(server: Running) -> None:
    """Over /mcp the three views take the key's scope as their HTTP endpoints do: a key's own
    namespaces (all of them on an open server), its namespace's sessions and timeline."""
    server.memory.add([{"text": "Alice moved to Lisbon.", "timestamp": "2023-05-02"}], namespace="alice")
    server.memory.add_turn("Alice", "I flew to Oslo yesterday.", session_id="trip", timestamp="2024-03-14T10:00:00",
                           namespace="alice")
    server.memory.add_turn("Bob", "Meet at noon.", session_id="bob-chat", namespace="bob")
    seen: dict[str, Any] = {}

    def views(key: str | None, label: str, **headers: str) -> None:
        async def script(session: ClientSession) -> None:
            seen[label] = {
                "namespaces": call_json(await session.call_tool("memory_namespaces", {}))["namespaces"],
                "sessions": call_json(await session.call_tool("memory_sessions", {"limit": 10}))["sessions"],
                "timeline": call_json(await session.call_tool("memory_timeline", {"field": "event"}))}
        run_session(server.url, key, script, **headers)

    def over_http(key: str | None, **headers: str) -> dict[str, Any]:
        with server.client(key, **headers) as http:
            return {"namespaces": http.get("/v1/namespaces").json(),
                    "sessions": http.get("/v1/sessions", params={"limit": 10}).json(),
                    "timeline": http.get("/v1/timeline", params={"field": "event"}).json()}

    views(None, "open", **{"X-Engram-Namespace": "alice"})  # no keys yet: every namespace is listed
    assert seen["open"] == over_http(None, **{"X-Engram-Namespace": "alice"})
    assert {r["namespace"] for r in seen["open"]["namespaces"]} == {"alice", "bob"}
    reader, _ = server.keys.create(["alice"], "read")
    both, _ = server.keys.create(["alice", "bob"], "admin")
    views(reader, "reader")
    assert seen["reader"] == over_http(reader)
    assert [r["namespace"] for r in seen["reader"]["namespaces"]] == ["alice"]
    assert [s["session_id"] for s in seen["reader"]["sessions"]] == ["trip"] and "bob" not in json.dumps(seen["reader"])
    views(both, "both", **{"X-Engram-Namespace": "bob"})
    assert seen["both"] == over_http(both, **{"X-Engram-Namespace": "bob"})
    assert [s["session_id"] for s in seen["both"]["sessions"]] == ["bob-chat"]
    assert {r["namespace"] for r in seen["both"]["namespaces"]} == {"alice", "bob"}
    newcomer, _ = server.keys.create(["fresh", "alice"], "read")  # a namespace that holds nothing yet is listed
    views(newcomer, "newcomer", **{"X-Engram-Namespace": "fresh"})
    assert seen["newcomer"] == over_http(newcomer, **{"X-Engram-Namespace": "fresh"})
    assert [(r["namespace"], r["count"] > 0) for r in seen["newcomer"]["namespaces"]] == [("alice", True), ("fresh", False)]


def serve_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str, env: dict[str, str] | None = None
              ) -> tuple[Any, str]:
    """Run `engram … serve` as the CLI builds it (its options, its store), with uvicorn's run
    replaced by a server on a free loopback port in a thread; (the uvicorn server, its URL)."""
    import socket
    import threading
    import time

    import uvicorn
    from click.testing import CliRunner

    from engramdb.cli import main

    captured: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: captured.update(app=app))
    result = CliRunner().invoke(main, [*args, "serve", "--no-web"], env={"ENGRAM_EMBEDDER": "minilm", **(env or {})})
    assert result.exit_code == 0, result.output
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(captured["app"], host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    for _ in range(500):
        if server.started:
            break
        time.sleep(0.01)
    assert server.started
    return server, f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("how", ["option", "env"])
def test_open_serve_acts_in_the_namespace_the_cli_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        how: str) -> None:
    """`engram -n agent serve` (or ENGRAM_NAMESPACE=agent) without keys: the HTTP API and /mcp
    read and write `agent`, as the CLI does; a request may still name another namespace."""
    from engramdb import Memory

    db = tmp_path / "open.db"
    with Memory(db, namespace="agent", embedder="minilm") as mem:
        [bike] = mem.add(["Ann rides her bike to work."])
    args, env = (["--db", str(db), "-n", "agent"], None) if how == "option" else \
        (["--db", str(db)], {"ENGRAM_NAMESPACE": "agent"})
    server, url = serve_cli(tmp_path, monkeypatch, *args, env=env)
    seen: dict[str, Any] = {}
    try:
        with httpx.Client(base_url=url, timeout=60) as http:
            found = http.post("/v1/memories/search", json={"query": "bike"}).json()
            assert [h["id"] for h in found["hits"]] == [bike]
            http.post("/v1/memories", json={"text": "Ann's bike is red."}).raise_for_status()
            other = http.get("/v1/memories", headers={"X-Engram-Namespace": "other"}).json()
            assert other["results"] == []

        async def script(session: ClientSession) -> None:
            seen["hits"] = call_json(await session.call_tool("memory_search", {"query": "bike"}))["hits"]
            call_json(await session.call_tool("memory_add_turn", {"speaker": "Ann", "text": "I fixed my bike.",
                                                                  "session_id": "d"}))
            seen["sessions"] = call_json(await session.call_tool("memory_sessions", {}))["sessions"]

        run_session(url, None, script)
    finally:
        server.should_exit = True
    assert bike in {h["id"] for h in seen["hits"]}
    assert [s["session_id"] for s in seen["sessions"]] == ["d"]
    with Memory(db, embedder="minilm") as mem:
        assert mem.count(namespace="default") == 0
        assert mem.count(namespace="agent", filters={"kind": "turn"}) == 1
