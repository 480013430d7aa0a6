"""Engram over HTTP: a FastAPI app on the same `Memory` API (`engram serve`), with API keys.

Install with ``pip install 'engramdb[server]'``. See docs/SERVER.md.
"""
