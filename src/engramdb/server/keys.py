"""API keys: each bound to namespaces and a role, stored hashed in a keys file.

A key is 32 random bytes (``eg_`` + URL-safe base64), shown once when created. The file
(mode 0600) keeps only its SHA-256, its id, namespaces, role and times, so a copied file
gives no access. Which file (`keys_path`): ``--keys PATH`` / ``$ENGRAM_KEYS`` if given, else
``<store>.keys.json`` beside a SQLite store. A ``postgresql://`` store has no file to sit
beside, so it needs ``--keys`` (several servers of one database share the file's contents:
it holds only hashes). Keys are high-entropy tokens, so a plain hash is
enough (no password stretching needed); lookups compare hashes in constant time.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

try:  # POSIX; elsewhere keys commands are not run concurrently by this lock
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

from ..errors import InputError, NotFoundError
from ..model import utc_now
from ..validation import check_name

ROLES = ("read", "write", "admin")
ROLE_RANK = {role: i for i, role in enumerate(ROLES)}


@dataclass(slots=True)
class ApiKey:
    id: str
    hash: str
    namespaces: list[str]
    role: str
    created_at: str
    revoked_at: str | None = None
    label: str | None = None

    def public(self) -> dict[str, Any]:
        """What `engram keys list` shows: everything but the hash."""
        return {k: v for k, v in asdict(self).items() if k != "hash"}

    def allows(self, role: str) -> bool:
        return ROLE_RANK[self.role] >= ROLE_RANK[role]


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def keys_path(db: str | Path, keys: str | Path | None = None, *, required: bool = True) -> Path | None:
    """The keys file of store `db`: `keys` (``--keys`` / ``$ENGRAM_KEYS``) if given, else
    ``<db>.keys.json`` beside a SQLite file. For a URL without `keys` it raises `InputError`,
    or (``required=False``: a server that may run open on loopback) returns None: no keys."""
    if keys:
        return Path(keys).expanduser()
    from ..store.open import backend_of, redact

    if backend_of(db) == "sqlite":
        return Path(str(db) + ".keys.json")
    if not required:
        return None
    raise InputError(f"store {redact(db)} is a database URL, so there is no file beside it to keep API keys in: "
                     "pass --keys PATH (or set $ENGRAM_KEYS) to name the keys file")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock beside the keys file for a read-modify-write: two `engram keys
    create` at once must not each save the file without the other's key."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(str(path) + ".lock", "a+b") as handle:
        if fcntl is not None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


@dataclass
class KeyStore:
    """The keys file of one store. Reads it anew on each lookup, so `engram keys revoke`
    takes effect on a running server.

    Once a store has keys it stays closed: revoking every key, or losing the file, does not
    open a running server (each request is refused until a valid key is presented)."""

    path: Path | None  # None: no keys file (a database URL served open on loopback)
    _cache: tuple[float, list[ApiKey]] | None = field(default=None, repr=False)
    _had_keys: bool = field(default=False, repr=False)

    def _load(self) -> list[ApiKey]:
        if self.path is None:
            return []
        try:
            stamp = self.path.stat().st_mtime
        except FileNotFoundError:
            return []
        if self._cache is not None and self._cache[0] == stamp:
            return self._cache[1]
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            keys = [ApiKey(**item) for item in raw["keys"]]
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{self.path}: not a valid Engram keys file ({exc})") from None
        self._cache = (stamp, keys)
        self._had_keys = self._had_keys or bool(keys)
        return keys

    def _save(self, keys: list[ApiKey]) -> None:
        if self.path is None:
            raise InputError("no keys file: pass --keys PATH (or set $ENGRAM_KEYS)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=self.path.name, dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"keys": [asdict(k) for k in keys]}, handle, indent=2)
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)  # atomic: a reader sees the old file or the new one
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._cache = None

    def active(self) -> list[ApiKey]:
        return [k for k in self._load() if k.revoked_at is None]

    def configured(self) -> bool:
        """Whether requests need a key: the file holds any key, revoked ones too, or held
        one since this store was opened. Unreadable, it needs one (and none is valid)."""
        try:
            return bool(self._load()) or self._had_keys
        except InputError:
            self._had_keys = True
            return True

    def create(self, namespaces: list[str], role: str, label: str | None = None) -> tuple[str, ApiKey]:
        """A new key (returned once, in clear) and its record."""
        if role not in ROLES:
            raise InputError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
        if not namespaces:
            raise InputError("a key needs at least one namespace")
        try:
            namespaces = [check_name(ns, "namespace") for ns in namespaces]
        except ValueError as exc:
            raise InputError(str(exc)) from None
        secret = "eg_" + secrets.token_urlsafe(32)
        record = ApiKey(id="key_" + secrets.token_hex(6), hash=_digest(secret), namespaces=list(dict.fromkeys(namespaces)),
                        role=role, created_at=utc_now(), label=label)
        if self.path is None:
            raise InputError("no keys file: pass --keys PATH (or set $ENGRAM_KEYS)")
        with _locked(self.path):
            self._cache = None  # read under the lock: another process may have just written
            self._save([*self._load(), record])
        return secret, record

    def revoke(self, key_id: str) -> ApiKey:
        if self.path is None:
            raise NotFoundError(f"no active key {key_id!r}")
        with _locked(self.path):
            self._cache = None
            keys = self._load()
            for key in keys:
                if key.id == key_id and key.revoked_at is None:
                    key.revoked_at = utc_now()
                    self._save(keys)
                    return key
        raise NotFoundError(f"no active key {key_id!r}")

    def lookup(self, secret: str) -> ApiKey | None:
        """The active key `secret` is, or None."""
        digest = _digest(secret)
        found = None
        for key in self.active():
            if hmac.compare_digest(key.hash, digest):
                found = key
        return found
