"""Engram's exceptions: one base class so callers (and the CLI) can catch them all."""


class EngramError(Exception):
    """Base class for every error Engram raises on purpose."""


class InputError(EngramError, ValueError):
    """Bad input from the caller: an invalid entry, filter, file line or option."""


class ModelMismatchError(EngramError):
    """The store's vectors were made by a different embedding model than the one requested."""


class EmbedderUnavailable(EngramError):
    """An embedding model or endpoint cannot be loaded or reached."""
