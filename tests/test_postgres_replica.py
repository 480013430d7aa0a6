"""Read scaling with a streaming replica: a PostgreSQL primary and a hot standby of it
(``pg_basebackup -R``, tests/pg.py `start_standby`) on loopback. Entries written with
`Memory(<primary URL>)` are searched on the standby with `Memory(<standby URL>)` once it has
replayed them: the same ids and scores as on the primary. A standby is opened read-only by
itself (it creates nothing on open) and refuses writes with `ReadOnlyStoreError`."""

from __future__ import annotations

import time
from typing import Iterator

import psycopg
import pytest

from engramdb import Memory
from engramdb.errors import ReadOnlyStoreError
from pg import PostgresServer, PostgresUnavailable, skip_or_fail, start_postgres, start_standby

NOTES = [
    "Alice moved to Berlin in 2021 and works as a nurse at the Charité hospital.",
    "Bob prefers green tea over coffee; he drinks it every morning before running.",
    "The quarterly report is due on Friday; Carol owns the revenue section.",
    "Our team migrated the billing service from MySQL to PostgreSQL last spring.",
    "We chose pgvector with HNSW indexes for the semantic memory of our agents.",
    "Frank booked flights to Tokyo for the conference in October.",
    "Green tea and jasmine tea are both popular in southern China.",
    "张伟上个月搬到了上海，在一家医院当护士。",
    "我们把计费服务从 MySQL 迁移到了 PostgreSQL。",
]
QUERIES = ["green tea", "who works as a nurse?", "PostgreSQL migration", "Tokyo conference", "护士"]
# Replay on loopback takes milliseconds; the bound only keeps a broken standby from hanging the run.
REPLAY_PATIENCE_S = 120.0


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[PostgresServer, PostgresServer]]:
    """A primary and a hot standby streaming from it; both stopped afterwards (the standby
    first: it may run the binaries copied into the primary's folder)."""
    try:
        primary = start_postgres(primary=True)
    except PostgresUnavailable as exc:
        skip_or_fail(exc, "PostgreSQL (replication primary)")
    try:
        try:
            standby = start_standby(primary)
        except PostgresUnavailable as exc:
            skip_or_fail(exc, "PostgreSQL (hot standby)")
        try:
            yield primary, standby
        finally:
            standby.stop()
    finally:
        primary.stop()


def wait_replayed(primary: PostgresServer, standby: PostgresServer) -> None:
    """Wait until the standby has replayed everything the primary has written so far."""
    with psycopg.connect(primary.url(), autocommit=True) as conn:
        # Flushed WAL is what the WAL sender streams (the test server commits asynchronously).
        conn.execute("SELECT pg_switch_wal()")
        lsn = conn.execute("SELECT pg_current_wal_flush_lsn()").fetchone()[0]
    deadline = time.monotonic() + REPLAY_PATIENCE_S
    with psycopg.connect(standby.url(), autocommit=True) as conn:
        while True:
            caught_up = conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (lsn,)).fetchone()[0]
            if caught_up:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"the standby did not replay up to {lsn} within {REPLAY_PATIENCE_S:g} s")
            time.sleep(0.05)


def results(memory: Memory, namespace: str | None = None) -> dict[tuple[str, str], list[tuple[str, float]]]:
    return {(preset, query): [(h.id, h.score) for h in memory.search(query, k=5, preset=preset, namespace=namespace)]
            for preset in ("default", "lexical", "semantic") for query in QUERIES}


def assert_same(a: dict, b: dict) -> None:
    for key in a:
        assert [i for i, _ in a[key]] == [i for i, _ in b[key]], key
        assert [s for _, s in a[key]] == pytest.approx([s for _, s in b[key]], rel=0, abs=1e-9), key


def test_search_on_standby_matches_primary(pair: tuple[PostgresServer, PostgresServer]) -> None:
    primary, standby = pair
    with psycopg.connect(standby.url(), autocommit=True) as conn:
        assert conn.execute("SELECT pg_is_in_recovery()").fetchone()[0] is True
    url = primary.new_database()  # CREATE DATABASE is replicated too
    database = url.rsplit("/", 1)[1]
    with Memory(url, embedder="minilm") as writer:
        ids = writer.add(NOTES[:6])
        writer.add([{"id": "team-note", "text": "Erin is allergic to peanuts.", "metadata": {"team": "ops"}}],
                   namespace="ops")
        writer.delete(ids[5])
        on_primary = results(writer)
        on_primary_ops = results(writer, "ops")
        wait_replayed(primary, standby)

        with Memory(standby.url(database), read_only=True) as reader:
            assert reader.store.in_recovery and reader.store.read_only
            on_standby = results(reader)
            assert_same(on_primary, on_standby)
            assert_same(on_primary_ops, results(reader, "ops"))
            assert any(hits for hits in on_standby.values())
            assert ids[5] not in {i for hits in on_standby.values() for i, _ in hits}
            assert [e.id for e in reader.get(ids[:5])] == ids[:5]

            # A later write on the primary reaches a standby Memory that stays open.
            more = writer.add(NOTES[6:])
            on_primary = results(writer)
            wait_replayed(primary, standby)
            on_standby = results(reader)
            assert_same(on_primary, on_standby)
            assert set(more) & {i for hits in on_standby.values() for i, _ in hits}
            assert [e.id for e in reader.get(more)] == more


def test_standby_opens_read_only_and_refuses_writes(pair: tuple[PostgresServer, PostgresServer]) -> None:
    primary, standby = pair
    url = primary.new_database()
    database = url.rsplit("/", 1)[1]
    with Memory(url, embedder="minilm") as writer:
        [entry_id] = writer.add(["Bob prefers green tea over coffee."])
    wait_replayed(primary, standby)
    # Without read_only: the store finds the server in recovery, creates nothing, and every write
    # is refused before it reaches the server (socket URL form too).
    for target in (standby.url(database), standby.socket_url(database)):
        with Memory(target, embedder="minilm") as replica:
            assert replica.store.read_only and replica.store.in_recovery
            assert [h.id for h in replica.search("green tea")] == [entry_id]
            with pytest.raises(ReadOnlyStoreError, match="standby"):
                replica.add(["Carol owns the revenue section."])
            with pytest.raises(ReadOnlyStoreError, match="standby"):
                replica.delete(entry_id)
    # A database the primary never made an Engram store in is not created on the standby.
    empty = primary.new_database().rsplit("/", 1)[1]
    wait_replayed(primary, standby)
    from engramdb.errors import StoreError
    with pytest.raises(StoreError, match="no Engram store"):
        Memory(standby.url(empty))
