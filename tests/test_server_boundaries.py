"""The HTTP API's boundaries over real sockets on loopback (`test_server.Running`): what a
key may see of the store, paths without an id, the limits its messages state, the shape of
entries against the CLI's, and the addresses `engram serve` refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_server import Running, error


@pytest.fixture()
def server(tmp_path: Path):
    running = Running(tmp_path / "edges.db")
    yield running
    running.stop()


def test_stats_show_a_key_only_its_own_namespaces(server: Running) -> None:
    server.memory.add(["Alice's note."], namespace="alice")
    server.memory.add(["Bob's plan.", "Bob's other plan."], namespace="bob")
    with server.client() as http:  # no keys yet: the operator on loopback sees the whole store
        whole = http.get("/v1/stats").json()
    assert set(whole["namespaces"]) == {"alice", "bob"} and whole["count"] == 3
    assert whole["path"].endswith("edges.db") and whole["vectors"] == 3 and whole["file_bytes"] > 0
    admin, _ = server.keys.create(["alice"], "admin")
    with server.client(admin) as http:
        scoped = http.get("/v1/stats")
        assert scoped.status_code == 200, scoped.text
        assert [r["namespace"] for r in http.get("/v1/namespaces").json()] == ["alice"]  # as stats now
    stats = scoped.json()
    assert set(stats["namespaces"]) == {"alice"} and stats["count"] == 1 and "bob" not in scoped.text
    # store-wide totals would tell of the other namespaces; the file is the operator's
    assert stats["vectors"] is None and stats["file_bytes"] is None and stats["path"] is None
    assert stats["embedder"] == whole["embedder"] and stats["schema_version"] == whole["schema_version"]
    two, _ = server.keys.create(["alice", "bob"], "admin")
    with server.client(two) as http:
        assert set(http.get("/v1/stats").json()["namespaces"]) == {"alice", "bob"}


def test_a_path_without_an_entry_id_is_404_and_never_redirected(server: Running) -> None:
    server.memory.add(["Keep me.", "Keep me too."], namespace="scratch")
    with server.client(**{"X-Engram-Namespace": "scratch"}) as http:
        for method in ("GET", "PATCH", "DELETE", "POST"):
            response = http.request(method, "/v1/memories/", params={"all": "true"})
            assert error(response) == (404, "not_found"), (method, response.status_code, response.headers)
            assert "location" not in response.headers and "no entry id" in response.json()["error"]["message"]
        # `curl -L -X DELETE '…/v1/memories/?all=true'` once followed a 307 into the bulk delete
        followed = http.delete("/v1/memories/", params={"all": "true"}, follow_redirects=True)
        assert error(followed) == (404, "not_found") and server.memory.count(namespace="scratch") == 2
        # no path is redirected: a trailing slash is another path, not served
        for path in ("/v1/namespaces/", "/v1/memories/search/", "/healthz/"):
            answer = http.get(path)
            assert error(answer) == (404, "not_found") and "location" not in answer.headers, path
        assert http.get("/v1/memories").status_code == 200


def test_a_k_out_of_range_is_told_the_limit_that_applies_here(tmp_path: Path) -> None:
    """The server's --max-k (100 by default) is below the library's 1,000: every k out of
    range, too small or too large, is told the server's range, over HTTP and MCP alike."""
    from test_mcp_http import run_session

    from engramdb.server.app import Limits

    for max_k, most in ((100, 100), (5_000, 1_000)):  # a --max-k above the library's: the library's
        running = Running(tmp_path / f"k{max_k}.db", Limits(max_k=max_k))
        try:
            with running.client() as http:
                for k in (0, -1, most + 1):
                    answer = http.post("/v1/memories/search", json={"query": "tea", "k": k})
                    assert answer.json()["error"] == {
                        "code": "bad_input", "message": f"k must be an integer from 1 to {most} here, not {k}"}
                assert http.post("/v1/memories/search", json={"query": "tea", "k": most}).status_code == 200
                assert http.get("/healthz").json()["max_k"] == most  # what the page offers, not 5,000
            said: list[str] = []

            async def script(session) -> None:  # type: ignore[no-untyped-def]
                for k in (0, most + 1):
                    result = await session.call_tool("memory_search", {"query": "tea", "k": k})
                    assert result.is_error
                    said.append(result.content[0].text)

            run_session(running.url, None, script)
            assert [text.split(": ", 1)[1] for text in said] == [  # "Error executing tool memory_search: …"
                f"k must be an integer from 1 to {most} here, not {k}" for k in (0, most + 1)]
        finally:
            running.stop()


def test_serve_refuses_an_empty_host_in_one_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from engramdb.cli import main
    from engramdb.server.addresses import is_loopback

    for host in ("", "  "):
        refused = CliRunner().invoke(main, ["--db", str(tmp_path / "h.db"), "serve", "--host", host, "--port", "0"])
        assert refused.exit_code == 1, refused.output
        assert refused.output.strip() == ("error: --host is empty: give the address to listen on (127.0.0.1 for this "
                                          "machine only; 0.0.0.0 or :: for every interface, which needs API keys)")
        assert "loopback" not in refused.output  # it was called loopback, then could not listen on ':0'
    assert not is_loopback("")  # a socket bound to '' listens on every interface
    assert is_loopback("localhost") and is_loopback("127.0.0.1") and is_loopback("[::1]")


def test_entries_have_one_shape_over_http_and_in_the_cli(server: Running, tmp_path: Path) -> None:
    """An entry over HTTP is what `engram … --json` prints for it: a source lists only its set
    fields (`{}` for a plain fact, never every field as null), a hit has no `context` unless
    asked; and both match `engram schema`."""
    import jsonschema
    from click.testing import CliRunner

    from engramdb.cli import main
    from engramdb.schema import json_schema

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "trip.md").write_text("# Trip\n\n## Hotel\nThe hotel in Oslo is by the harbour.\n", encoding="utf-8")
    server.memory.import_path(notes)
    [fact] = server.memory.add(["Bob likes green tea."])
    server.memory.add_turn("Alice", "I booked the Oslo hotel yesterday.", session_id="trip", timestamp="2024-03-14")
    db = server.memory.store.location

    def cli(*args: str) -> object:
        run = CliRunner().invoke(main, ["--db", db, *args, "--json"])
        assert run.exit_code == 0, run.output
        return json.loads(run.output)

    with server.client() as http:
        listed = http.get("/v1/memories", params={"limit": 100}).json()
        assert listed == cli("list", "--limit", "100")
        assert http.get(f"/v1/memories/{fact}").json()["source"] == {}
        for entry in listed["results"]:
            over_http = http.get(f"/v1/memories/{entry['id']}").json()
            assert [over_http] == cli("get", entry["id"])["entries"]  # type: ignore[index]
            assert None not in over_http["source"].values()
            jsonschema.validate(over_http, json_schema("entry"))
        kinds = {e["kind"]: e["source"] for e in listed["results"]}
        assert kinds["chunk"]["path"] == "trip.md" and kinds["chunk"]["heading_path"] == ["Trip", "Hotel"]
        assert set(kinds["turn"]) == {"session_id", "turn_id", "speaker"}
        found = http.post("/v1/memories/search", json={"query": "Oslo hotel", "k": 5}).json()
        hits = cli("search", "Oslo hotel", "-k", "5")["hits"]  # type: ignore[index]
        assert found["hits"] == hits and all("context" not in h for h in hits)
        history = http.get(f"/v1/memories/{fact}/history").json()
        assert history == cli("history", fact) and history[0]["new"]["source"] == {}


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_a_max_k_above_the_librarys_is_refused_at_startup(tmp_path: Path, command: str) -> None:
    """--max-k 5000 started a server that advertised 5,000 and refused k = 2,000."""
    from click.testing import CliRunner

    from engramdb.cli import main

    result = CliRunner().invoke(main, ["--db", str(tmp_path / "k.db"), command, "--max-k", "5000"])
    assert result.exit_code == 2
    assert "5000 is not in the range 1<=x<=1000" in result.output
    assert not (tmp_path / "k.db").exists()
