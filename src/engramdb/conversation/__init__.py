"""Conversation memory: dialogue turns plus atomic facts extracted from them, linked back.

>>> from engramdb import Memory                                       # doctest: +SKIP
>>> with Memory("chat.db") as mem:
...     mem.add_conversation(
...         [("Caroline", "I went to a LGBTQ support group yesterday."),
...          ("Melanie", "That's great! I'm painting a sunrise.")],
...         session_id="s1", session_time="2023-05-08T13:56:00")
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import InputError
from .extract import ExtractionResult, Extractor, OfflineExtractor
from .formats import FORMATS, detect_format, read_conversations
from .ingest import ConversationReport, build_turns, ingest_conversations, write_session
from .model import Conversation, Turn

if TYPE_CHECKING:  # pragma: no cover
    from ..llm import EnvLLM, LLMClient

EXTRACTORS = ("offline", "llm", "none")


def get_extractor(spec: "str | Extractor | None", llm: "LLMClient | None" = None,
                  env: "EnvLLM | None" = None) -> Extractor | None:
    """``"offline"`` (default), ``"llm"`` (needs a client or ``ENGRAM_LLM_*`` settings), ``"none"``
    (turns only) or an object with an ``extract`` method. ``env`` keeps the environment's client between calls."""
    if spec is None or spec == "none":
        return None
    if not isinstance(spec, str):
        return spec
    if spec == "offline":
        return OfflineExtractor()
    if spec == "llm":
        from ..llm import LLMError, llm_from_env
        from .llm_extract import LLMExtractor

        try:
            client = llm or (env.get() if env is not None else llm_from_env())
        except LLMError as exc:  # a malformed setting: refused before anything is written, like a missing one
            raise InputError(f"the llm extractor cannot use the endpoint: {exc}") from None
        if client is None:
            raise InputError(
                "the llm extractor needs an endpoint: set ENGRAM_LLM_BASE_URL and ENGRAM_LLM_MODEL "
                "(and ENGRAM_LLM_API_KEY if it wants one), or use --extractor offline"
            )
        return LLMExtractor(client)
    raise InputError(f"unknown extractor {spec!r}; choose one of {', '.join(EXTRACTORS)}")


__all__ = [
    "Conversation", "Turn", "ConversationReport", "ExtractionResult", "Extractor", "OfflineExtractor",
    "FORMATS", "EXTRACTORS", "detect_format", "read_conversations", "build_turns", "ingest_conversations",
    "write_session", "get_extractor",
]
