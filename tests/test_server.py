"""The HTTP API over real sockets on loopback: uvicorn in a thread, httpx as the client."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest
import uvicorn
from click.testing import CliRunner

from engramdb import InputError, Memory
from engramdb.cli import main
from engramdb.server.app import Limits, create_app
from engramdb.server.keys import KeyStore, keys_path


class Running:
    def __init__(self, db: Path | str, limits: Limits | None = None, keys: KeyStore | None = None,
                 **app_options: bool) -> None:
        self.memory = Memory(db, embedder="minilm", allow_preset_files=False)
        self.keys = keys if keys is not None else KeyStore(keys_path(db))
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        app = create_app(self.memory, self.keys, limits, **app_options)
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        for _ in range(500):
            if self.server.started:
                break
            time.sleep(0.01)
        assert self.server.started
        self.url = f"http://127.0.0.1:{self.port}"

    def client(self, key: str | None = None, **headers: str) -> httpx.Client:
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.memory.close()


@pytest.fixture()
def server(tmp_path: Path):
    running = Running(tmp_path / "srv.db", Limits(max_body_bytes=200_000, max_batch=50, max_k=50))
    yield running
    running.stop()


def error(response: httpx.Response) -> tuple[int, str]:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    return response.status_code, body["error"]["code"]


def test_memory_api_end_to_end_without_keys(server: Running) -> None:
    with server.client() as http:
        assert http.get("/healthz").json()["status"] == "ok"
        added = http.post("/v1/memories", json={"entries": ["Alice lives in Berlin.",
                                                            {"text": "Bob likes tea.", "persons": ["Bob"]}]})
        assert added.status_code == 200, added.text
        ids = [e["id"] for e in added.json()["results"]]
        assert len(ids) == 2 and added.json()["results"][1]["persons"] == ["Bob"]
        found = http.post("/v1/memories/search", json={"q": "who likes tea", "top_k": 1}).json()
        assert [h["id"] for h in found["hits"]] == [ids[1]] and "channels" in found["hits"][0]
        moved = http.post("/v1/memories", json={"text": "Alice moved to Lisbon.", "supersedes": [ids[0]]}).json()
        new_id = moved["results"][0]["id"]
        assert http.get(f"/v1/memories/{ids[0]}").json()["superseded_by"] == new_id
        patched = http.patch(f"/v1/memories/{new_id}", json={"text": "Alice moved to Lisbon in 2024.", "actor": "me"})
        assert patched.status_code == 200 and patched.json()["text"].endswith("2024.")
        events = http.get(f"/v1/memories/{new_id}/history").json()
        assert [(e["event"], e["actor"]) for e in events] == [("ADD", None), ("UPDATE", "me")]
        page = http.get("/v1/memories", params={"limit": 1}).json()
        assert len(page["results"]) == 1 and page["next_cursor"]
        rest = http.get("/v1/memories", params={"limit": 5, "cursor": page["next_cursor"]}).json()
        assert rest["next_cursor"] is None and len(page["results"]) + len(rest["results"]) == 2
        assert http.get("/v1/memories", params={"filter": "person=Bob"}).json()["results"][0]["id"] == ids[1]
        other = http.post("/v1/memories", json={"text": "Carol's note."}, headers={"X-Engram-Namespace": "carol"})
        assert other.status_code == 200
        assert http.get(f"/v1/memories/{other.json()['results'][0]['id']}").status_code == 404  # another namespace
        assert {r["namespace"] for r in http.get("/v1/namespaces").json()} == {"default", "carol"}
        assert http.delete(f"/v1/memories/{ids[1]}").json() == {"deleted": 1}
        assert error(http.delete(f"/v1/memories/{ids[1]}")) == (404, "not_found")
        assert http.get("/v1/stats").json()["count"] >= 3


def test_errors_have_one_shape_and_the_right_status(server: Running) -> None:
    with server.client() as http:
        assert error(http.post("/v1/memories/search", json={"query": "x", "filters": {"colour": "red"}})) == \
            (400, "bad_input")
        assert error(http.post("/v1/memories/search", json={"query": "x", "k": 500})) == (400, "bad_input")
        assert error(http.post("/v1/memories/search", json={"query": "x", "preset": "/etc/passwd.toml"})) == \
            (400, "bad_input")
        assert error(http.post("/v1/memories/search", json={"k": 3})) == (422, "invalid_request")
        assert error(http.post("/v1/memories", json={"text": "x", "colour": 1})) == (422, "invalid_request")
        assert error(http.post("/v1/memories", json={"entry": {"text": "x", "location": 5}})) == (400, "bad_input")
        assert error(http.post("/v1/memories", json={"entries": ["x"] * 51})) == (400, "bad_input")
        assert error(http.post("/v1/memories", content=b"{" + b" " * 300_000 + b"}",
                               headers={"content-type": "application/json"})) == (413, "too_large")
        # A chunked body (no Content-Length) is held to the same limit, on the API and on MCP.
        big = (b"x" * 50_000 for _ in range(6))
        assert error(http.post("/v1/memories", content=big, headers={"content-type": "application/json"})) == \
            (413, "too_large")
        assert error(http.post("/mcp", content=(b"x" * 50_000 for _ in range(6)),
                               headers={"content-type": "application/json"})) == (413, "too_large")
        tiny = json.dumps({"query": "tea " * 500}).encode()  # 2,000 one-byte chunks, held as one body
        assert http.post("/v1/memories/search", content=(tiny[i:i + 1] for i in range(len(tiny))),
                         headers={"content-type": "application/json"}).json()["hits"] == []
        small = (part for part in (b'{"query": ', b'"anything"}'))
        assert http.post("/v1/memories/search", content=small, headers={"content-type": "application/json"}
                         ).json()["hits"] == []
        # The doors validate as the library does, with messages that say what is wrong.
        assert error(http.post("/v1/memories/search", json={"query": "x", "k": "3"})) == (422, "invalid_request")
        assert error(http.post("/v1/memories/search", json={"query": "x", "k": True})) == (422, "invalid_request")
        for query, status in (([], (400, "bad_input")), ([{"role": "user"}], (400, "bad_input")),
                              (5, (422, "invalid_request"))):  # text or chat messages (never searched as "[]")
            refused = http.post("/v1/memories/search", json={"query": query})
            assert error(refused) == status and "query" in refused.json()["error"]["message"]
        both = http.post("/v1/memories", json={"text": "a", "entry": {"text": "b"}})
        assert error(both) == (400, "bad_input") and "not text and entry" in both.json()["error"]["message"]
        empty = http.post("/v1/memories/search", headers={"content-type": "application/json"})
        assert error(empty) == (422, "invalid_request") and "needs a JSON object body" in empty.json()["error"]["message"]
        for kind in ("text/plain", "application/x-www-form-urlencoded", None):  # JSON, but not said to be
            plain = http.post("/v1/memories/search", content=b'{"query": "tea"}',
                              headers={"content-type": kind} if kind else {})
            assert error(plain) == (422, "invalid_request") and \
                "sent with Content-Type: application/json" in plain.json()["error"]["message"], kind
        bulk = http.delete("/v1/memories")  # the API's spelling, not the library's all=True
        assert error(bulk) == (400, "bad_input") and "?all=true" in bulk.json()["error"]["message"]
        garbled = http.post("/v1/memories/search", content=b"not json", headers={"content-type": "application/json"})
        assert error(garbled) == (400, "bad_input") and "not valid JSON" in garbled.json()["error"]["message"]
        assert "a filter is key=value" in http.get("/v1/memories", params={"filter": "noeq"}).json()["error"]["message"]
        twice = http.post("/v1/memories/search", json={"query": "a", "q": "b"}).json()["error"]
        assert twice == {"code": "invalid_request", "message": "give one of query or q, not query and q"}
        # The framework's own errors come in the same shape.
        assert error(http.get("/v1/nothing-here")) == (404, "not_found")
        searched = http.get("/v1/memories/search")  # read as the entry "search": says where searching is
        assert error(searched) == (404, "not_found") and "POST /v1/memories/search" in searched.json()["error"]["message"]
        assert error(http.put("/v1/memories", json={})) == (405, "method_not_allowed")
        # Allow names every method the path serves (it named the first route's only: POST, GET).
        for method, path, allowed in (("PUT", "/v1/memories", "DELETE, GET, HEAD, POST"),
                                      ("POST", "/v1/memories/abc", "DELETE, GET, HEAD, PATCH")):
            refused = http.request(method, path, json={})
            assert refused.status_code == 405 and refused.headers["allow"] == allowed, (path, refused.headers)
            assert allowed in refused.json()["error"]["message"]
        # HEAD wherever GET is: GET's status and headers, no body (it was 405 everywhere).
        for path in ("/healthz", "/v1/memories", "/v1/namespaces", "/v1/export", "/v1/memories/nope"):
            got, head = http.get(path), http.head(path)
            assert (head.status_code, head.content) == (got.status_code, b""), path
            assert head.headers["content-type"] == got.headers["content-type"], path
        assert error(http.post("/v1/memories", content=b'{"text": "\xff\xfe"}',
                               headers={"content-type": "application/json"})) == (400, "bad_input")
        assert error(http.get("/v1/memories/nope")) == (404, "not_found")
        assert error(http.patch("/v1/memories/nope", json={"text": "x"})) == (404, "not_found")
        assert error(http.get("/v1/memories", params={"cursor": "garbage"})) == (400, "bad_input")
        assert http.get("/v1/memories").json() == {"results": [], "next_cursor": None}  # nothing was written


def test_api_keys_scope_every_request(server: Running) -> None:
    alice_w, _ = server.keys.create(["alice"], "write")
    alice_r, _ = server.keys.create(["alice"], "read")
    bob_w, _ = server.keys.create(["bob"], "write")
    multi, _ = server.keys.create(["alice", "bob"], "admin")
    with server.client(bob_w) as bob:
        bob_id = bob.post("/v1/memories", json={"text": "Bob's secret plan."}).json()["results"][0]["id"]
    with server.client() as anonymous:
        assert error(anonymous.get("/v1/memories")) == (401, "unauthorized")
    with server.client("eg_not-a-key") as wrong:
        assert error(wrong.get("/v1/memories")) == (401, "unauthorized")
    with server.client(**{"X-API-Key": alice_w}) as alice:  # X-API-Key works too
        assert alice.post("/v1/memories", json={"text": "Alice's note."}).status_code == 200
        assert error(alice.get(f"/v1/memories/{bob_id}")) == (404, "not_found")  # bob's id: not found
        assert error(alice.get("/v1/memories", headers={"X-Engram-Namespace": "bob"})) == (403, "forbidden")
        assert "Bob" not in json.dumps(alice.post("/v1/memories/search", json={"query": "secret plan"}).json()["hits"])
        assert [r["namespace"] for r in alice.get("/v1/namespaces").json()] == ["alice"]
        assert error(alice.get("/v1/stats")) == (403, "forbidden")
    with server.client(alice_r) as reader:
        assert reader.get("/v1/memories").json()["results"][0]["text"] == "Alice's note."
        assert error(reader.post("/v1/memories", json={"text": "no"})) == (403, "forbidden")
        assert error(reader.delete(f"/v1/memories/{bob_id}")) == (403, "forbidden")
    with server.client(alice_r, **{"X-API-Key": bob_w}) as both:  # two keys: neither is guessed
        answer = both.get("/v1/memories")
        assert error(answer) == (400, "bad_input") and "different keys" in answer.json()["error"]["message"]
    with server.client(alice_r, **{"X-API-Key": alice_r}) as same:
        assert same.get("/v1/memories").status_code == 200
    with server.client() as raw:  # two Authorization headers (a proxy adding its own): the first used to win
        two = raw.get("/v1/memories", headers=[("Authorization", f"Bearer {multi}"), ("Authorization", f"Bearer {alice_r}")])
        assert error(two) == (400, "bad_input") and "Authorization is given 2 times" in two.json()["error"]["message"]
    fresh, _ = server.keys.create(["fresh", "alice"], "read")
    with server.client(fresh) as newcomer:  # a namespace that holds nothing yet is listed too (it saw only alice)
        assert [(r["namespace"], r["count"], r["current"]) for r in newcomer.get("/v1/namespaces").json()] == \
            [("alice", 1, 1), ("fresh", 0, 0)]
    with server.client(multi) as admin:
        assert error(admin.get("/v1/memories")) == (400, "bad_input")  # must name one of its namespaces
        bob_page = admin.get("/v1/memories", params={"namespace": "bob"}).json()
        assert [e["id"] for e in bob_page["results"]] == [bob_id]
        assert admin.get("/v1/stats").status_code == 200
    revoked = server.keys.revoke(server.keys.lookup(bob_w).id)  # type: ignore[union-attr]
    assert revoked.revoked_at
    with server.client(bob_w) as bob:
        assert error(bob.get("/v1/memories")) == (401, "unauthorized")


def test_a_write_by_a_key_is_recorded_as_that_key(server: Running) -> None:
    """On a team's server an edit's history said nobody (MCP's writes say "mcp"): a write that
    names no actor is the key's, by its label, else its id; an actor the request names wins."""
    labelled, _ = server.keys.create(["team"], "admin", label="ci-bot")
    plain, record = server.keys.create(["team"], "write")
    with server.client(labelled) as bot, server.client(plain) as other:
        [added] = bot.post("/v1/memories", json={"text": "The deploy window is Tuesday."}).json()["results"]
        other.patch(f"/v1/memories/{added['id']}", json={"text": "The deploy window is Wednesday."})
        bot.patch(f"/v1/memories/{added['id']}", json={"topic": "ops", "actor": "release-script"})
        events = bot.get(f"/v1/memories/{added['id']}/history").json()
        assert [e["actor"] for e in events] == ["key:ci-bot", f"key:{record.id}", "release-script"]
        other.delete(f"/v1/memories/{added['id']}")
        assert bot.get(f"/v1/memories/{added['id']}/history").json()[-1]["actor"] == f"key:{record.id}"
        # Turns too (they were recorded as no one), with the facts drawn from them; a named actor wins.
        said = other.post("/v1/conversations/team%2Fstandup/turns",
                          json={"turns": [{"speaker": "Ana", "text": "I moved the deploy to Friday."}]}).json()
        assert said["facts"] >= 1
        fact_ids = [e["id"] for e in bot.get("/v1/memories", params={"filter": "session_id=team/standup"}).json()["results"]]
        assert said["ids"][0] in fact_ids and len(fact_ids) == 1 + said["facts"]
        for entry_id in fact_ids:
            assert [e["actor"] for e in bot.get(f"/v1/memories/{entry_id}/history").json()] == [f"key:{record.id}"]
        named = bot.post("/v1/conversations/team%2Fstandup/turns",
                         json={"turns": [{"speaker": "Bo", "text": "Fine by me."}], "actor": "standup-bot"}).json()
        assert bot.get(f"/v1/memories/{named['ids'][0]}/history").json()[0]["actor"] == "standup-bot"


def test_a_server_with_keys_stays_closed_when_they_are_revoked_or_lost(server: Running) -> None:
    cli = KeyStore(keys_path(server.memory.store.location))  # as `engram keys` in another process
    secret, record = cli.create(["alice"], "write")
    with server.client(secret) as alice:
        assert alice.post("/v1/memories", json={"text": "Alice's vault code is 5512."}).status_code == 200
    cli.revoke(record.id)  # the last key
    with server.client() as anonymous, server.client(secret) as revoked:
        assert error(anonymous.get("/v1/memories", params={"namespace": "alice"})) == (401, "unauthorized")
        assert error(revoked.get("/v1/memories")) == (401, "unauthorized")
        assert error(anonymous.delete("/v1/memories", params={"all": "true", "namespace": "alice"})) == \
            (401, "unauthorized")
        assert keys_path(server.memory.store.location).exists()
        keys_path(server.memory.store.location).unlink()  # the file lost: still closed
        assert error(anonymous.get("/v1/stats")) == (401, "unauthorized")
        keys_path(server.memory.store.location).write_text("{not json")
        status, code = error(revoked.get("/v1/memories"))
        assert (status, code) == (503, "keys_unavailable")
        assert "keys.json" not in revoked.get("/v1/memories").text  # the server's paths stay its own
    assert server.memory.count(namespace="alice") == 1


def test_a_loopback_server_answers_only_requests_addressed_to_loopback(server: Running) -> None:
    with server.client() as http:
        assert http.get("/v1/memories").status_code == 200
        assert http.get("/v1/memories", headers={"Host": f"localhost:{server.port}"}).status_code == 200
        rebound = http.get("/v1/memories", headers={"Host": f"attacker.example:{server.port}"})
        assert error(rebound) == (403, "forbidden") and "loopback" in rebound.json()["error"]["message"]
        cross = http.post("/v1/memories", json={"text": "injected"}, headers={"Origin": "http://attacker.example"})
        assert error(cross) == (403, "forbidden")
        sandboxed = http.post("/v1/memories", json={"text": "injected"}, headers={"Origin": "null"})
        assert error(sandboxed) == (403, "forbidden")  # a sandboxed frame or a local file
        same = http.post("/v1/memories", json={"text": "from the page"}, headers={"Origin": server.url})
        assert same.status_code == 200
    assert [e.text for e in server.memory.list()] == ["from the page"]
    secret, _ = server.keys.create(["default"], "read")  # with keys, a proxy may forward its own name
    with server.client(secret) as proxied:
        assert proxied.get("/v1/memories", headers={"Host": "memory.example.org"}).status_code == 200


def test_keys_created_at_once_are_all_kept(tmp_path: Path) -> None:
    path = tmp_path / "k.keys.json"
    made: list[str] = []
    threads = [threading.Thread(target=lambda: made.append(KeyStore(path).create(["n"], "read")[0])) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 6 and all(KeyStore(path).lookup(secret) is not None for secret in made)


def test_openapi_describes_every_endpoint(server: Running) -> None:
    with server.client() as http:
        spec = http.get("/openapi.json").json()
        assert http.get("/docs").status_code == 200
    paths = spec["paths"]
    for path, methods in {"/v1/memories": {"get", "post", "delete"}, "/v1/memories/search": {"post"},
                          "/v1/purge-expired": {"post"}, "/v1/import": {"post"}, "/v1/export": {"get"},
                          "/v1/conversations/{session_id}/turns": {"post"},
                          "/v1/memories/{entry_id}": {"get", "patch", "delete"},
                          "/v1/memories/{entry_id}/history": {"get"}, "/v1/namespaces": {"get"},
                          "/v1/stats": {"get"}, "/v1/timeline": {"get"}, "/v1/sessions": {"get"},
                          "/healthz": {"get"}}.items():
        assert methods <= set(paths[path]), path
    assert {"bearer", "apiKey"} == set(spec["components"]["securitySchemes"]) and spec["security"]
    search = spec["paths"]["/v1/memories/search"]["post"]["responses"]
    assert {"400", "401", "403", "409", "413", "422", "503"} <= set(search)
    health = spec["paths"]["/healthz"]["get"]
    assert health["security"] == [] and set(health["responses"]) == {"200", "503"}  # 503: the store cannot be read
    hit = spec["components"]["schemas"]["HitModel"]["properties"]
    assert {"metadata", "namespace", "score", "channels"} <= set(hit)


def test_keys_cli_and_serve_refuses_open_non_loopback(tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "k.db")
    refused = runner.invoke(main, ["--db", db, "serve", "--host", "0.0.0.0"])
    assert refused.exit_code == 1 and "no API keys: refusing to serve on 0.0.0.0" in refused.output
    created = runner.invoke(main, ["--db", db, "keys", "create", "--namespace", "alice", "--role", "read"])
    assert created.exit_code == 0
    secret = created.stdout.strip().splitlines()[-1]
    assert secret.startswith("eg_") and len(secret) > 30
    stored = Path(db + ".keys.json").read_text()
    assert secret not in stored and "hash" in stored
    listed = json.loads(runner.invoke(main, ["--db", db, "keys", "list", "--json"]).output)
    assert listed[0]["namespaces"] == ["alice"] and "hash" not in listed[0] and secret not in json.dumps(listed)
    text = runner.invoke(main, ["--db", db, "keys", "list"]).output
    assert f"created {listed[0]['created_at']}" in text and "active" in text  # the dates SERVER.md promises
    assert runner.invoke(main, ["--db", db, "keys", "revoke", listed[0]["id"]]).exit_code == 0
    assert "revoked " in runner.invoke(main, ["--db", db, "keys", "list"]).output
    again = runner.invoke(main, ["--db", db, "keys", "revoke", listed[0]["id"]])
    assert again.exit_code == 1 and "no active key" in again.output


def test_serve_names_a_port_it_cannot_use_in_one_line(tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "p.db")
    out_of_range = runner.invoke(main, ["--db", db, "serve", "--port", "99999"])
    assert out_of_range.exit_code == 2 and "99999 is not in the range" in out_of_range.output
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = runner.invoke(main, ["--db", db, "serve", "--port", str(port)])
    assert busy.exit_code == 1 and f"error: cannot listen on 127.0.0.1:{port}: Address already in use" in busy.output
    assert "Traceback" not in busy.output and not Path(db).exists()  # refused before the store was opened


def test_a_session_id_with_slashes_takes_turns_sent_either_way(server: Running) -> None:
    """`engram add-turn --session team/standup` worked, but over HTTP both
    /v1/conversations/team%2Fstandup/turns and /team/standup/turns were 404."""
    with server.client() as http:
        for path in ("/v1/conversations/team%2Fstandup/turns", "/v1/conversations/team/standup/turns",
                     "/v1/conversations/a%2Fturns/turns"):
            sent = http.post(path, json={"turns": [{"speaker": "Ann", "text": f"Standup notes posted to {path}."}]})
            assert sent.status_code == 200, (path, sent.text)
    sessions = {row["session_id"]: row["turns"] for row in server.memory.sessions()}
    assert sessions == {"team/standup": 2, "a/turns": 1}


def test_a_namespace_named_twice_differently_or_empty_is_a_bad_request(server: Running) -> None:
    """The header won silently over ?namespace=, an empty ?namespace= meant the server's own
    namespace, and a header that is not UTF-8 made a namespace of its bytes ("ÿþ")."""
    with server.client() as http:
        assert http.post("/v1/memories?namespace=a", json={"entries": ["Alice lives in Berlin."]}).status_code == 200
        both = http.get("/v1/memories?namespace=a", headers={"X-Engram-Namespace": "b"})
        assert error(both) == (400, "bad_input") and both.json()["error"]["message"] == (
            "X-Engram-Namespace ('b') and ?namespace= ('a') name different namespaces; name one")
        assert http.get("/v1/memories?namespace=a", headers={"X-Engram-Namespace": "a"}).json()["results"]
        for empty in (http.get("/v1/memories?namespace="), http.get("/v1/memories", headers={"X-Engram-Namespace": ""})):
            assert error(empty) == (400, "bad_input") and "names no namespace" in empty.json()["error"]["message"]
        latin = http.post("/v1/memories", json={"entries": ["Bob likes tea."]},
                          headers={"X-Engram-Namespace": b"\xff\xfe"})  # type: ignore[dict-item]
        assert error(latin) == (400, "bad_input") and "UTF-8" in latin.json()["error"]["message"]
        chinese = http.get("/v1/memories", headers={"X-Engram-Namespace": "中文".encode()})  # type: ignore[dict-item]
        assert chinese.status_code == 200 and chinese.json()["results"] == []
        # Named twice in one way (the last ?namespace= or the first header used to win), on /v1 and /mcp.
        for path in ("/v1/memories", "/mcp"):
            twice = http.get(path, params=[("namespace", "a"), ("namespace", "b")])
            assert error(twice) == (400, "bad_input") and "?namespace= is given 2 times" in twice.json()["error"]["message"]
            two = http.get(path, headers=[("X-Engram-Namespace", "a"), ("X-Engram-Namespace", "b")])
            assert error(two) == (400, "bad_input") and "X-Engram-Namespace is given 2 times" in two.json()["error"]["message"]
        assert http.get("/v1/memories", params=[("namespace", "a"), ("namespace", "a")]).json()["results"]
    assert server.memory.stats()["namespaces"].keys() == {"a"}


def test_turns_may_be_chat_messages(server: Running) -> None:
    """{"role", "content"} was 422 'speaker: Field required', though a conversation file's
    messages are read so and the error of another route says "missing 'speaker' (or 'role')"."""
    with server.client() as http:
        sent = http.post("/v1/conversations/chat/turns", json={"turns": [
            {"role": "user", "content": "I adopted a kitten named Miso."}, {"speaker": "assistant", "text": "Lovely!"}]})
        assert sent.status_code == 200, sent.text
    assert sorted(e.source.speaker for e in server.memory.list(filters={"kind": "turn"})) == ["assistant", "user"]


def test_the_openapi_document_takes_the_other_names_the_server_takes(server: Running) -> None:
    """A turn as {"role", "content"} and a search with q / top_k were accepted but refused by the
    published schema (extra keys forbidden, speaker and text required): a client generated from
    /openapi.json could not send them. Both names of a field together stay refused."""
    import jsonschema

    with server.client() as http:
        document = http.get("/openapi.json").json()
        components = document["components"]["schemas"]

        def valid(name: str, body: dict) -> bool:
            schema = {**components[name], "components": document["components"]}  # its $refs resolve here
            return jsonschema.Draft202012Validator(schema).is_valid(body)

        for name, body, accepted in (("TurnIn", {"role": "user", "content": "I adopted a kitten."}, True),
                                     ("TurnIn", {"speaker": "Ann", "text": "Hi."}, True),
                                     ("TurnIn", {"role": "user"}, False),
                                     ("TurnIn", {"speaker": "Ann", "role": "user", "text": "Hi."}, False),
                                     ("SearchRequest", {"q": "tea", "top_k": 3}, True),
                                     ("SearchRequest", {"query": "tea", "limit": 2}, True),
                                     ("SearchRequest", {"k": 3}, False),
                                     ("SearchRequest", {"query": "a", "q": "b"}, False)):
            assert valid(name, body) is accepted, (name, body)
            path, wrapped = ("/v1/conversations/c/turns", {"turns": [body]}) if name == "TurnIn" else \
                ("/v1/memories/search", body)
            answer = http.post(path, json=wrapped)
            assert (answer.status_code == 200) is accepted, (body, answer.text)


def test_a_search_may_be_chat_messages_as_over_mcp_and_in_python(server: Running) -> None:
    """MCP's memory_search took the chat messages as a list; /v1/memories/search answered 422
    'query: Input should be a valid string' and Memory.search refused them."""
    server.memory.add(["Alice moved to Lisbon in 2024.", "The wifi password is hunter2."])
    messages = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Hi!"},
                {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Where does Alice live now?"}]
    in_python = server.memory.search(messages, k=2)
    assert in_python.hits[0].text == "Alice moved to Lisbon in 2024."
    assert [h.id for h in in_python.hits] == [h.id for h in server.memory.search(json.dumps(messages), k=2).hits]
    with server.client() as http:
        found = http.post("/v1/memories/search", json={"query": messages, "k": 2})
        assert found.status_code == 200, found.text
        assert [(h["id"], round(h["score"], 6)) for h in found.json()["hits"]] == [
            (h.id, round(h.score, 6)) for h in in_python.hits]
        refused = http.post("/v1/memories/search", json={"query": [{"role": "user"}]})
        assert error(refused) == (400, "bad_input") and "no message in it says anything" in refused.text
    with pytest.raises(InputError, match="no message in it says anything"):
        server.memory.search([{"role": "system", "content": "Be brief."}])
    with pytest.raises(InputError, match="a query given as a list must be chat messages"):
        server.memory.search([{"role": "user", "content": "x"}, "y"])  # type: ignore[list-item]


def test_a_bad_turn_in_a_request_writes_none_of_its_turns(server: Running) -> None:
    turns = [{"speaker": "Ann", "text": "First turn about the picnic."},
             {"speaker": "Ben", "text": "Second turn, sounds good."},
             {"speaker": "Ann", "text": "Third turn", "timestamp": "not-a-time"}]
    with server.client() as http:
        bad = http.post("/v1/conversations/atom/turns", json={"turns": turns})
        assert error(bad) == (400, "bad_input") and bad.json()["error"]["message"].startswith("turns[2]: timestamp")
        assert server.memory.count() == 0
        turns[2]["timestamp"] = "2024-06-01T12:00:00"
        assert http.post("/v1/conversations/atom/turns", json={"turns": turns}).status_code == 200
    assert server.memory.count(filters={"kind": "turn"}) == 3


def test_turns_sent_at_once_to_one_session_get_distinct_ids(server: Running) -> None:
    def send(speaker: str) -> None:
        with server.client() as http:
            for i in range(6):
                assert http.post("/v1/conversations/race/turns", json={"turns": [
                    {"speaker": speaker, "text": f"turn {i} from {speaker}"}]}).status_code == 200

    threads = [threading.Thread(target=send, args=(name,)) for name in ("Ann", "Ben")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    turn_ids = [e.source.turn_id for e in server.memory.list(filters={"kind": "turn"}, limit=100)]
    assert len(turn_ids) == 12 and len(set(turn_ids)) == 12


def test_turns_import_and_export_over_http(server: Running, tmp_path: Path) -> None:
    admin, _ = server.keys.create(["alice"], "admin")
    writer, _ = server.keys.create(["alice"], "write")
    with server.client(writer) as http:
        report = http.post("/v1/conversations/trip/turns", json={"turns": [
            {"speaker": "Alice", "text": "I flew to Oslo yesterday.", "timestamp": "2024-03-14T10:00:00"},
            {"speaker": "Bob", "text": "How was it?", "timestamp": "2024-03-14T10:01:00"}]})
        assert report.status_code == 200, report.text
        assert report.json()["turns"] == 2 and report.json()["facts"] >= 1
        # The fact restated from Alice's turn may rank first and stand for it: ask for turns.
        found = http.post("/v1/memories/search", json={"query": "How was Oslo?", "k": 5, "context": 1,
                                                       "filters": {"kind": "turn"}}).json()
        turn_hit = next(h for h in found["hits"] if h["kind"] == "turn" and "Oslo" in h["text"])
        assert [(c["offset"], c["speaker"]) for c in turn_hit["context"]] == [(1, "Bob")]
        assert error(http.post("/v1/memories/search", json={"query": "x", "context": 11})) == (400, "bad_input")
        assert error(http.post("/v1/import", content=b'{"text": "x"}\n')) == (403, "forbidden")
        dump = http.get("/v1/export")
        assert dump.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in dump.text.splitlines()]
    assert lines[0]["engram_export"] == 2 and any(x.get("entry", {}).get("kind") == "turn" for x in lines)
    entry_lines = sum("entry" in x for x in lines)
    assert lines[-1] == {"end": {"entries": entry_lines, "history": sum("history" in x for x in lines)}}
    # Restore the dump into an empty server's namespace: the same entries come back.
    other = Running(tmp_path / "copy.db")
    try:
        key, _ = other.keys.create(["alice"], "admin")
        with other.client(key) as http:
            cut = http.post("/v1/import", content=b"".join(dump.content.splitlines(keepends=True)[:-1]))
            assert error(cut) == (400, "bad_input") and "cut short" in cut.json()["error"]["message"]
            restored = http.post("/v1/import", content=dump.content)
            assert restored.status_code == 200, restored.text
            assert restored.json()["format"] == "export" and restored.json()["entries"] == entry_lines
            again = http.get("/v1/export").text.splitlines()
            assert [json.loads(x) for x in again[1:]] == lines[1:]
            bad = http.post("/v1/import", content=b'{"text": "fine"}\n{"text": 5}\n')
            assert error(bad) == (400, "bad_input")
            assert bad.json()["error"]["message"].startswith("body:2: entry text must be a string")
            listed = http.get("/v1/memories", params={"limit": 1000}).json()["results"]
            assert len(listed) == sum(1 for x in lines if "entry" in x)
    finally:
        other.stop()
    with server.client(admin) as http:
        entries = http.post("/v1/import", content=b'{"text": "Imported over HTTP."}\n').json()
        assert entries["written"] == 1


def test_bulk_delete_and_purge_need_admin_and_stay_in_scope(server: Running) -> None:
    admin, _ = server.keys.create(["alice"], "admin")
    writer, _ = server.keys.create(["alice"], "write")
    bob, _ = server.keys.create(["bob"], "write")
    with server.client(bob) as http:
        http.post("/v1/memories", json={"entries": [{"text": "Bob's tea note.", "persons": ["Bob"]}]})
    with server.client(writer) as http:
        http.post("/v1/memories", json={"entries": [
            {"text": "Alice met Bob for tea.", "persons": ["Bob"]}, {"text": "Alice likes jazz."},
            {"text": "Parking pass for May.", "expires_at": "2020-05-31T00:00:00"}]})
        assert error(http.delete("/v1/memories", params={"filter": "person=Bob"})) == (403, "forbidden")
        assert error(http.post("/v1/purge-expired")) == (403, "forbidden")
    with server.client(admin) as http:
        assert error(http.delete("/v1/memories")) == (400, "bad_input")  # no filter and no all=true
        assert error(http.delete("/v1/memories", params={"filter": "colour=red"})) == (400, "bad_input")
        assert http.delete("/v1/memories", params={"filter": "person=Bob", "actor": "ops"}).json() == {"deleted": 1}
        assert http.post("/v1/purge-expired").json() == {"deleted": 1}
        assert [e["text"] for e in http.get("/v1/memories").json()["results"]] == ["Alice likes jazz."]
        assert http.delete("/v1/memories", params={"all": "true"}).json() == {"deleted": 1}
        assert http.get("/v1/memories").json()["results"] == []
    assert server.memory.count(namespace="bob") == 1  # Bob's entry with person=Bob is untouched


def test_timeline_and_sessions_for_any_reader_in_its_namespace(server: Running) -> None:
    writer, _ = server.keys.create(["alice"], "write")
    reader, _ = server.keys.create(["alice"], "read")
    bob, _ = server.keys.create(["bob"], "write")
    with server.client(bob) as http:
        http.post("/v1/conversations/bobs/turns", json={"turns": [{"speaker": "Bob", "text": "Bob's own chat."}]})
    with server.client(writer) as http:
        http.post("/v1/memories", json={"entries": [{"text": "May note.", "timestamp": "2023-05-02T09:00:00"},
                                                    {"text": "Undated note."}]})
        http.post("/v1/conversations/trip/turns", json={"turns": [
            {"speaker": "Alice", "text": "I flew to Oslo yesterday.", "timestamp": "2024-03-14T10:00:00"},
            {"speaker": "Bob", "text": "How was it?", "timestamp": "2024-03-14T10:01:00"}]})
    with server.client(reader) as http:
        timeline = http.get("/v1/timeline", params={"field": "event", "bucket": "year"})
        assert timeline.status_code == 200, timeline.text
        body = timeline.json()
        assert body["bucket"] == "year" and body["undated"] == 1
        assert [p["start"] for p in body["points"]] == ["2023-01-01", "2024-01-01"]
        turns = http.get("/v1/timeline", params={"field": "event", "filter": "kind=turn"}).json()
        assert turns["points"] == [{"start": "2024-03-14", "count": 2}]
        assert http.get("/v1/timeline").json()["field"] == "created"
        sessions = http.get("/v1/sessions").json()
        assert [(s["session_id"], s["turns"], s["speakers"]) for s in sessions] == [("trip", 2, ["Alice", "Bob"])]
        assert error(http.get("/v1/timeline", params={"bucket": "hour"})) == (422, "invalid_request")
        assert error(http.get("/v1/sessions", params={"limit": 0})) == (400, "bad_input")
        assert error(http.get("/v1/timeline", params={"filter": "colour=red"})) == (400, "bad_input")
    with server.client() as anonymous:
        assert error(anonymous.get("/v1/sessions")) == (401, "unauthorized")


def test_a_lower_max_k_caps_the_default_k_and_refuses_a_larger_one(tmp_path: Path) -> None:
    running = Running(tmp_path / "capped.db", Limits(max_k=3))
    try:
        with running.client() as http:
            http.post("/v1/memories", json={"entries": [f"Note {i} about tea." for i in range(6)]})
            found = http.post("/v1/memories/search", json={"query": "tea"})  # k not given: 10 > 3
            assert found.status_code == 200, found.text
            assert len(found.json()["hits"]) == 3
            assert error(http.post("/v1/memories/search", json={"query": "tea", "k": 4}))[0] in (400, 422)
    finally:
        running.stop()


def test_an_import_the_client_abandons_leaves_no_temporary_file(server: Running, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    spool = tmp_path / "spool"
    spool.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool))  # where the server spools the body
    line = json.dumps({"text": "Alice lives in Berlin."}).encode() + b"\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
        raw.sendall(b"POST /v1/import HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\n"
                    b"Content-Length: 100000\r\n\r\n" + line * 50)  # then the client goes away
        time.sleep(0.3)
    for _ in range(200):  # the server notices the disconnect and cleans up (bounded wait)
        if not list(spool.iterdir()):
            break
        time.sleep(0.05)
    assert list(spool.iterdir()) == []
    with server.client() as http:  # and it still serves
        assert http.get("/healthz").json()["status"] == "ok"


def test_ids_with_slashes_are_reachable_as_sent_or_percent_encoded(server: Running) -> None:
    """An id may be a path or a URL: GET, PATCH, DELETE and /history reach it whether the
    client sends its slashes as they are or percent-encoded (%2F, as encodeURIComponent and
    ``quote(id, safe="")`` do); an id that itself ends in /history is reached encoded."""
    from urllib.parse import quote

    ids = ["notes/trip.md#2", "https://example.org/a/b?c=1", "a/history", "100%/x y"]
    with server.client() as http:
        added = http.post("/v1/memories", json={"entries": [{"id": i, "text": f"Entry {n}."}
                                                            for n, i in enumerate(ids)]})
        assert [e["id"] for e in added.json()["results"]] == ids
        for n, entry_id in enumerate(ids):
            encoded = quote(entry_id, safe="")
            plain = quote(entry_id, safe="/:")  # slashes as they are
            for path in (encoded, plain) if not entry_id.endswith("/history") else (encoded,):
                got = http.get(f"/v1/memories/{path}")
                assert got.status_code == 200 and got.json()["id"] == entry_id, (path, got.text)
            patched = http.patch(f"/v1/memories/{encoded}", json={"text": f"Entry {n}, corrected."})
            assert patched.status_code == 200 and patched.json()["id"] == entry_id, patched.text
            history = http.get(f"/v1/memories/{plain}/history")
            assert [e["event"] for e in history.json()] == ["ADD", "UPDATE"], history.text
            assert all(e["id"] == entry_id for e in history.json())
        # "a/history" as sent is the history of "a", which does not exist; encoded it is the entry.
        assert error(http.get("/v1/memories/a/history")) == (404, "not_found")
        assert http.get("/v1/memories/a%2Fhistory/history").json()[0]["id"] == "a/history"
        assert http.delete(f"/v1/memories/{quote(ids[0], safe='')}").json() == {"deleted": 1}
        assert http.delete("/v1/memories/https://example.org/a/b%3Fc=1").json() == {"deleted": 1}
        assert error(http.get(f"/v1/memories/{quote(ids[0], safe='')}")) == (404, "not_found")
        assert http.get("/v1/memories/").status_code in (307, 404)  # no empty id: the listing's slash
    assert server.memory.count() == 2


def test_error_responses_match_the_schema_the_openapi_document_gives_them(server: Running) -> None:
    """Each error status an operation documents is described by the body it really sends,
    ``{"error": {"code", "message"}}`` (not FastAPI's default ``{"detail": [...]}``): real
    responses of every kind are checked against the published schema with jsonschema."""
    jsonschema = pytest.importorskip("jsonschema")
    with server.client() as http:
        spec = http.get("/openapi.json").json()
    assert "HTTPValidationError" not in spec["components"]["schemas"]

    def check(method: str, path: str, response: httpx.Response) -> None:
        documented = spec["paths"][path][method]["responses"][str(response.status_code)]
        schema = {**documented["content"]["application/json"]["schema"], "components": spec["components"]}
        validator = jsonschema.Draft202012Validator(schema)
        validator.validate(response.json())
        assert not validator.is_valid({"detail": [{"loc": ["body"], "msg": "x", "type": "missing"}]})
        assert not validator.is_valid({"error": {"code": "x", "message": "y"}, "detail": "extra"})

    with server.client() as http:
        check("post", "/v1/memories/search", http.post("/v1/memories/search", json={"query": "x", "k": "3"}))  # 422
        check("get", "/v1/memories", http.get("/v1/memories", params={"limit": "many"}))  # 422, a query value
        check("post", "/v1/memories/search", http.post("/v1/memories/search", json={"query": "x", "k": 500}))  # 400
        check("get", "/v1/memories/{entry_id}", http.get("/v1/memories/nope"))  # 404
        check("post", "/v1/memories", http.post("/v1/memories", content=b"{" + b" " * 300_000 + b"}",
                                                headers={"content-type": "application/json"}))  # 413
    reader, _ = server.keys.create(["alice"], "read")
    with server.client() as anonymous:
        check("get", "/v1/memories", anonymous.get("/v1/memories"))  # 401
    with server.client(reader) as http:
        check("post", "/v1/memories", http.post("/v1/memories", json={"text": "no"}))  # 403
        check("get", "/v1/stats", http.get("/v1/stats"))  # 403
        keys_path(server.memory.store.location).write_text("{not json")
        check("get", "/v1/sessions", http.get("/v1/sessions"))  # 503 keys_unavailable


def test_openapi_declares_the_import_body_and_its_report(server: Running) -> None:
    """/v1/import reads its body raw (a JSONL stream); the document still says there is one,
    and of which type, so a generated client sends it."""
    with server.client() as http:
        spec = http.get("/openapi.json").json()
        operation = spec["paths"]["/v1/import"]["post"]
        body = operation["requestBody"]
        assert body["required"] is True and list(body["content"]) == ["application/x-ndjson"]
        assert body["content"]["application/x-ndjson"]["schema"]["type"] == "string"
        report = operation["responses"]["200"]["content"]["application/json"]["schema"]
        assert report == {"$ref": "#/components/schemas/ImportReportModel"}
        sent = http.post("/v1/import", content=b'{"text": "Sent as the document says."}\n',
                         headers={"content-type": "application/x-ndjson"})
        assert sent.status_code == 200 and sent.json()["written"] == 1, sent.text


def test_turns_report_what_was_written_not_what_was_sent(server: Running) -> None:
    """Sending turns again writes nothing new (a turn id names its turn, the same words are a
    retry), and the report says so: ``turns`` counts the turns written, ``unchanged`` the
    retries; a corrected turn is written in its place and its old entries counted removed."""
    turns = [{"speaker": "Ann", "text": "I moved to Porto in May.", "turn_id": "t1",
              "timestamp": "2024-06-01T10:00:00"},
             {"speaker": "Ben", "text": "How do you like it?", "turn_id": "t2", "timestamp": "2024-06-01T10:01:00"}]
    with server.client() as http:
        first = http.post("/v1/conversations/move/turns", json={"turns": turns})
        assert first.status_code == 200, first.text
        body = first.json()
        assert body["turns"] == 2 and body["unchanged"] == 0 and body["written"] >= 2 and body["removed"] == 0
        # Each turn's id in the session and its entry id, as add_turn and MCP's memory_add_turn give them.
        assert body["turn_ids"] == ["t1", "t2"]
        assert [e.text for e in server.memory.get(body["ids"])] == ["Ann: I moved to Porto in May.",
                                                                    "Ben: How do you like it?"]
        count = server.memory.count()
        again = http.post("/v1/conversations/move/turns", json={"turns": turns}).json()
        assert again == {"session_id": "move", "turns": 0, "unchanged": 2, "facts": 0, "written": 0, "removed": 0,
                         "turn_ids": ["t1", "t2"], "ids": body["ids"]}
        assert server.memory.count() == count
        lovely = http.post("/v1/conversations/move/turns", json={"turns": [{"speaker": "Ben", "text": "Lovely."}]})
        assert lovely.json()["turns"] == 1 and lovely.json()["turn_ids"] == ["move:3"]
        twice = http.post("/v1/conversations/move/turns", json={"turns": [{"speaker": "Ben", "text": "Lovely."}]})
        assert twice.json()["unchanged"] == 1, twice.text  # the session's latest turn, sent twice
        assert twice.json()["turn_ids"] == ["move:3"] and twice.json()["ids"] == lovely.json()["ids"]
        report = server.memory.add_turn("Ann", "Thanks!", session_id="move")
        assert (report.turn_id, server.memory.get(report.id)[0].text) == ("move:4", "Ann: Thanks!")
        corrected = http.post("/v1/conversations/move/turns", json={"turns": [
            {"speaker": "Ann", "text": "I moved to Braga in May.", "turn_id": "t1"}]}).json()
        assert corrected["turns"] == 1 and corrected["unchanged"] == 0 and corrected["removed"] >= 1
        spec = http.get("/openapi.json").json()
    schema = spec["paths"]["/v1/conversations/{session_id}/turns"]["post"]["responses"]["200"]["content"]
    assert schema["application/json"]["schema"] == {"$ref": "#/components/schemas/TurnsResponse"}
    assert {"turns", "unchanged", "facts", "written", "removed"} <= set(spec["components"]["schemas"]["TurnsResponse"]
                                                                        ["properties"])
