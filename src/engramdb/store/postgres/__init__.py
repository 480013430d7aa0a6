"""The PostgreSQL + pgvector backend (docs/POSTGRES.md): `PostgresStore`."""

from .store import PostgresStore

__all__ = ["PostgresStore"]
