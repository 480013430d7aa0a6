"""Optional LLM access: a small client for OpenAI-compatible chat endpoints, configured from the environment."""

from __future__ import annotations

from .client import ChatResponse, EnvLLM, LLMClient, LLMConfig, LLMError, LLMNotConfigured, LLMUsage, llm_from_env

__all__ = ["ChatResponse", "EnvLLM", "LLMClient", "LLMConfig", "LLMError", "LLMNotConfigured", "LLMUsage",
           "llm_from_env"]
