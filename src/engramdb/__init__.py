"""Engram: a local-first hybrid memory and retrieval engine for LLM agents.

>>> from engramdb import Memory
>>> with Memory("engram.db") as mem:          # doctest: +SKIP
...     mem.add("Caroline went to an LGBTQ support group on 7 May 2023.")
...     mem.search("When did Caroline go to the support group?", k=3)
"""

from .conversation import Conversation, ConversationReport, OfflineExtractor, Turn
from .embed import Embedder, get_embedder
from .errors import (
    EmbedderUnavailable, EngramError, InputError, MemoryClosedError, ModelMismatchError, NotAStoreError,
    NotFoundError,
    ReadOnlyStoreError,
    StoreBusyError, StoreCorruptError, StoreError, StoreUnavailableError,
)
from .llm import LLMClient, LLMConfig, LLMError
from .lifecycle import EntryChanges, HistoryEvent
from .memory import Memory
from .migrate import migrate
from .model import ChannelScore, Entry, Hit, Page, SearchResult, Source
from .pipeline.presets import PRESET_NAMES, Preset, load_preset
from .rerank import OnnxCrossEncoder
from .store.base import Filters

__version__ = "0.1.0"

__all__ = [
    "Memory", "migrate", "Entry", "HistoryEvent", "EntryChanges", "Source", "Hit", "SearchResult", "Page", "ChannelScore", "Filters",
    "Turn", "Conversation", "ConversationReport", "OfflineExtractor",
    "Embedder", "get_embedder", "LLMClient", "LLMConfig", "LLMError",
    "Preset", "load_preset", "PRESET_NAMES", "OnnxCrossEncoder",
    "EngramError", "InputError", "ModelMismatchError", "EmbedderUnavailable",
    "NotFoundError", "StoreError", "MemoryClosedError", "NotAStoreError", "ReadOnlyStoreError", "StoreBusyError",
    "StoreCorruptError",
    "StoreUnavailableError", "__version__",
]
