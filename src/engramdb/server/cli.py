"""`engram serve` and `engram keys`: registered on the main command group; FastAPI and uvicorn
are imported only when the server starts, so the rest of the CLI works without them."""

from __future__ import annotations

import logging
import socket
import sys
from typing import TYPE_CHECKING, Any, Callable

import click

from ..errors import EngramError
from ..memory import MAX_K
from .addresses import is_loopback
from .keys import ROLES, KeyStore, keys_path

if TYPE_CHECKING:
    from ..memory import Memory


def _check_can_listen(host: str, port: int) -> None:
    """Raise EngramError (one line, exit status 1) when `host`:`port` cannot be listened on —
    in use, not an address of this machine — rather than let the server log it and exit 3."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server will
            probe.bind(address)
    except OSError as exc:
        raise EngramError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def keys_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--keys PATH`` / ``$ENGRAM_KEYS``: the API keys file (default: beside a SQLite store;
    required for a postgresql:// store)."""
    return click.option("--keys", "keys_file", envvar="ENGRAM_KEYS", default=None, metavar="PATH",
                        help="API keys file [env ENGRAM_KEYS; default <db>.keys.json beside a SQLite store; "
                             "required with a postgresql:// URL].")(command)


def register(main: click.Group, print_json: Callable[[Any], None]) -> None:
    @main.command()
    @click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default).")
    @click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535))
    @click.option("--max-body-bytes", default=10_000_000, show_default=True, type=click.IntRange(1))
    @click.option("--max-batch", default=1_000, show_default=True, type=click.IntRange(1),
                  help="Entries per add request.")
    @click.option("--max-k", default=100, show_default=True, type=click.IntRange(1, MAX_K),
                  help="Largest k a search may ask for (the library's 1,000 at most).")
    @click.option("--no-web", is_flag=True, help="Do not serve the web page at / (the API only).")
    @keys_option
    @click.pass_context
    def serve(ctx: click.Context, host: str, port: int, max_body_bytes: int, max_batch: int, max_k: int,
              no_web: bool, keys_file: str | None) -> None:
        """Serve the HTTP API (docs at /docs, OpenAPI at /openapi.json) and the web page at /.

        Without API keys (loopback only) requests act in the namespace of --namespace /
        ENGRAM_NAMESPACE (default "default") unless they name one; with keys, in their key's."""
        try:
            import uvicorn

            from .app import Limits, create_app
        except ImportError as exc:
            raise EngramError(f"the server needs its extras: pip install 'engramdb[server]' ({exc.name} missing)") from exc
        from ..memory import Memory

        if not host.strip():
            raise EngramError("--host is empty: give the address to listen on (127.0.0.1 for this machine only; "
                              "0.0.0.0 or :: for every interface, which needs API keys)")
        keys = KeyStore(keys_path(ctx.obj["db"], keys_file, required=False))
        if not keys.configured():
            if not is_loopback(host):
                where = "" if keys.path is not None else " (a database URL needs --keys PATH to name its keys file)"
                raise EngramError(f"no API keys{where}: refusing to serve on {host}. Create one with "
                                  "`engram keys create --namespace NAME --role write`, or bind to 127.0.0.1")
            click.echo("warning: no API keys configured; serving without authentication on loopback, in namespace "
                       f"{ctx.obj['namespace']!r} (a request may name another with X-Engram-Namespace)", err=True)
        elif ctx.obj.get("namespace_given"):
            click.echo("note: with API keys each request acts in its key's namespace; --namespace / "
                       "ENGRAM_NAMESPACE is not used", err=True)
        _check_can_listen(host, port)  # one error line, before the store is opened
        memory = Memory(ctx.obj["db"], embedder=ctx.obj["embedder"], allow_preset_files=False)
        _warm_in_background(memory)
        if not no_web:
            shown = f"[{host}]" if ":" in host else host
            click.echo(f"web page: http://{shown}:{port}/", err=True)
        app = create_app(memory, keys, Limits(max_body_bytes=max_body_bytes, max_batch=max_batch, max_k=max_k),
                         web=not no_web, host=host, close_on_shutdown=True, namespace=ctx.obj["namespace"])
        uvicorn.run(app, host=host, port=port, log_level="info")

    @main.command("mcp")
    @click.option("--max-k", default=100, show_default=True, type=click.IntRange(1, MAX_K),
                  help="Largest k memory_search may ask for, as `engram serve --max-k` (the library's 1,000 at most).")
    @click.pass_context
    def mcp_cmd(ctx: click.Context, max_k: int) -> None:
        """Serve the memory tools over MCP on stdio (for Claude Desktop, Cursor, any MCP client),
        on the store of --db and the namespace of --namespace."""
        try:
            from .mcp import build_server
        except ImportError as exc:
            raise EngramError(f"the MCP server needs its extras: pip install 'engramdb[server]' ({exc.name} missing)") \
                from exc
        from ..memory import Memory

        # One line a record on stderr, which a client keeps as the server's log: the SDK would
        # install rich's handler, which wraps each record at about 80 columns under a time
        # column (its own basicConfig then leaves this one in place). A tool called with bad
        # arguments is one INFO line naming the tool and the error.
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr,
                            force=True)
        with Memory(ctx.obj["db"], namespace=ctx.obj["namespace"], embedder=ctx.obj["embedder"],
                    allow_preset_files=False) as memory:
            build_server(memory, ctx.obj["namespace"], max_k=max_k).run("stdio")

    @main.group()
    def keys() -> None:
        """API keys for `engram serve`: create, list, revoke (stored hashed in a keys file: --keys
        PATH / $ENGRAM_KEYS, by default beside a SQLite store; required for a postgresql:// URL)."""

    @keys.command("create")
    @click.option("--namespace", "namespaces", multiple=True, required=True, help="A namespace it may use (repeatable).")
    @click.option("--role", type=click.Choice(ROLES), default="write", show_default=True)
    @click.option("--label", default=None, help="A note to tell keys apart.")
    @keys_option
    @click.pass_context
    def create(ctx: click.Context, namespaces: tuple[str, ...], role: str, label: str | None,
               keys_file: str | None) -> None:
        """Create a key; it is printed once, alone on the last line."""
        secret, record = KeyStore(keys_path(ctx.obj["db"], keys_file)).create(list(namespaces), role, label)
        click.echo(f"created {record.id} ({role} on {', '.join(record.namespaces)}); it is not shown again:", err=True)
        click.echo(secret)

    @keys.command("list")
    @click.option("--json", "as_json", is_flag=True)
    @keys_option
    @click.pass_context
    def list_keys(ctx: click.Context, as_json: bool, keys_file: str | None) -> None:
        """The keys (never their secrets)."""
        rows = [k.public() for k in KeyStore(keys_path(ctx.obj["db"], keys_file))._load()]
        if as_json:
            print_json(rows)
            return
        for row in rows:
            state = f"revoked {row['revoked_at']}" if row["revoked_at"] else "active"
            click.echo(f"{row['id']}  {row['role']:<5} {','.join(row['namespaces'])}  created {row['created_at']}  "
                       f"{state}  {row.get('label') or ''}".rstrip())

    @keys.command("revoke")
    @click.argument("key_id")
    @keys_option
    @click.pass_context
    def revoke(ctx: click.Context, key_id: str, keys_file: str | None) -> None:
        """Revoke a key by its id; a running server refuses it from the next request."""
        KeyStore(keys_path(ctx.obj["db"], keys_file)).revoke(key_id)
        click.echo(f"revoked {key_id}")


def _warm_in_background(memory: "Memory") -> None:
    """Load the store's indexes and caches (`Store.warm`) while the server starts, so the
    first requests do not pay for them; a failure is logged, never fatal (searches load what
    they need themselves)."""
    import threading
    import time

    def warm() -> None:
        start = time.perf_counter()
        try:
            memory.store.warm()
            from ..text.tokenize import get_jieba

            get_jieba()  # the Chinese segmenter's dictionary (~0.5 s), else the first Chinese question's
        except Exception as exc:  # noqa: BLE001 - a warm-up is best effort
            click.echo(f"warning: warming the store failed ({exc}); searches load what they need", err=True)
            return
        click.echo(f"store warmed in {time.perf_counter() - start:.1f} s", err=True)

    threading.Thread(target=warm, name="engram-warm", daemon=True).start()

