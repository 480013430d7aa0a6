"""`engram serve --db postgresql://…` as a user runs it: the keys file is named with --keys
(a URL has no file to keep keys beside), `engram keys create` writes it, and the server, in
a process of its own on a loopback port, answers a search with that key from the database."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from engramdb import Memory
from pg import PostgresServer


def engram(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engramdb.cli", *args], env=env, capture_output=True, text=True)


def test_serve_a_postgres_store_with_keys(tmp_path: Path, postgres_server: PostgresServer) -> None:
    database = postgres_server.new_database("served").rsplit("/", 1)[1]
    url = postgres_server.socket_url(database)
    env = {k: v for k, v in os.environ.items() if k != "ENGRAM_KEYS"} | {"ENGRAM_EMBEDDER": "minilm"}
    with Memory(url, namespace="alice", embedder="minilm") as mem:
        [stored] = mem.add(["Alice keeps her bicycle in the courtyard."])

    # Without --keys there is nowhere to keep keys for a URL: a clear error, no file written.
    refused = engram("--db", url, "keys", "create", "--namespace", "alice", env=env)
    assert refused.returncode == 1 and "--keys PATH" in refused.stderr
    keys_file = tmp_path / "conf" / "engram-keys.json"
    created = engram("--db", url, "keys", "create", "--namespace", "alice", "--role", "write", "--keys",
                     str(keys_file), env=env)
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip().splitlines()[-1]
    assert keys_file.is_file() and key not in keys_file.read_text() and (keys_file.stat().st_mode & 0o777) == 0o600
    listed = engram("--db", url, "keys", "list", env={**env, "ENGRAM_KEYS": str(keys_file)})  # the env var works too
    assert listed.returncode == 0 and "alice" in listed.stdout
    # Off loopback, a URL store without a keys file is refused (it would serve unauthenticated).
    open_wide = engram("--db", url, "serve", "--host", "0.0.0.0", "--port", "1", env=env)
    assert open_wide.returncode == 1 and "--keys PATH" in open_wide.stderr

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    served = subprocess.Popen([sys.executable, "-m", "engramdb.cli", "--db", url, "serve", "--port", str(port),
                               "--keys", str(keys_file), "--no-web"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        while True:  # until it listens (or exits: then the assertion below says why)
            if served.poll() is not None:
                break
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        assert served.poll() is None, served.stderr.read() if served.stderr else ""
        auth = {"Authorization": f"Bearer {key}"}
        assert httpx.post(f"{base}/v1/memories/search", json={"query": "bicycle"}, timeout=60).status_code == 401
        found = httpx.post(f"{base}/v1/memories/search", json={"query": "where is the bicycle?", "k": 3},
                           headers=auth, timeout=60)
        assert found.status_code == 200, found.text
        assert found.json()["hits"][0]["id"] == stored
        added = httpx.post(f"{base}/v1/memories", json={"text": "Alice moved to Lisbon."}, headers=auth, timeout=60)
        assert added.status_code == 200, added.text
    finally:
        served.send_signal(signal.SIGTERM)
        served.wait()
    log = served.stderr.read() if served.stderr else ""
    assert served.returncode in (0, -signal.SIGTERM), log
    assert "store warmed in" in log  # warmed in the background at start (Store.warm)
    with Memory(url, namespace="alice") as mem:  # the server wrote to the database
        assert [e.text for e in mem.get(added.json()["results"][0]["id"])] == ["Alice moved to Lisbon."]


def test_a_database_that_goes_away_is_503_with_retry_after_and_healthz_says_so() -> None:
    """The database server stops under a running `engram serve`: every request is a transient
    503 `store_unavailable` with Retry-After (declared in /openapi.json), /healthz fails too
    (without telling an unauthenticated caller the store's address), and all recover when
    the database comes back, with no restart of the server."""
    from pg import PostgresUnavailable, skip_or_fail, start_postgres
    from test_server import Running, error

    from engramdb.server.keys import KeyStore

    try:
        database = start_postgres()  # its own, to stop and start again
    except PostgresUnavailable as exc:
        skip_or_fail(exc)
    try:
        url = database.new_database("down")
        with Memory(url, embedder="minilm") as mem:
            mem.add(["Alice keeps her bicycle in the courtyard."])
        running = Running(url, keys=KeyStore(None))
        try:
            with running.client() as http:
                assert http.get("/healthz").json()["status"] == "ok"
                search = {"query": "where is the bicycle?", "k": 3}
                assert http.post("/v1/memories/search", json=search).status_code == 200
                spec = http.get("/openapi.json").json()
                declared = spec["paths"]["/v1/memories/search"]["post"]["responses"]["503"]
                assert "store_unavailable" in declared["description"] and "Retry-After" in declared["headers"]
                assert set(spec["paths"]["/healthz"]["get"]["responses"]) == {"200", "503"}

                database.halt()
                for response in (http.post("/v1/memories/search", json=search), http.get("/v1/memories"),
                                 http.post("/v1/memories", json={"text": "Bob likes tea."}), http.get("/v1/stats")):
                    assert error(response) == (503, "store_unavailable"), response.text
                    assert response.headers["retry-after"] == "5"
                    assert "cannot reach the database server" in response.json()["error"]["message"]
                    # the database's address is the operator's to read, in the log, not every key holder's
                    assert str(database.port) not in response.text and "postgresql://" not in response.text
                health = http.get("/healthz")
                assert error(health) == (503, "store_unavailable") and health.headers["retry-after"] == "5"
                assert "127.0.0.1" not in health.text and str(database.port) not in health.text

                database.resume()
                assert http.get("/healthz").status_code == 200
                found = http.post("/v1/memories/search", json=search)
                assert found.status_code == 200 and "bicycle" in found.json()["hits"][0]["text"]
                # A restart while the server sat idle: its connections ended unseen, and the first
                # request on each failed with a 503 before they were replaced.
                database.halt()
                database.resume()
                assert http.get("/healthz").status_code == 200
                assert http.post("/v1/memories/search", json=search).status_code == 200
                assert http.post("/v1/memories", json={"text": "Carol keeps her kayak in the garage."}).status_code == 200
        finally:
            running.stop()
    finally:
        database.stop()
