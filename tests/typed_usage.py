"""Not a test module: user code that must type-check under ``mypy --strict`` (tests/test_typing.py checks it),
so the public API's types reach users — iterating results, indexing and slicing them, annotating a page.

``assert_type`` fails the check when mypy infers another type (at run time it returns its argument)."""

from __future__ import annotations

from typing import assert_type

from engramdb import ConversationReport, Entry, Hit, Memory, Page, SearchResult


def best_hit(mem: Memory) -> Hit:
    for hit in mem.search("when did Priya book the flights?"):
        assert_type(hit, Hit)
        return hit
    raise LookupError("no hits")


def top_texts(mem: Memory) -> list[str]:
    result: SearchResult = mem.search("flights", k=5)
    assert_type(result[0], Hit)
    top: list[Hit] = result[:3]
    return [h.text for h in top] + [h.entry.id or "" for h in result[1:]]


def first_page(mem: Memory) -> tuple[Entry, list[Entry], str | None]:
    page: Page = mem.list(limit=10)
    for entry in page:
        assert_type(entry, Entry)
    return page[0], page[1:], page.next_cursor


def report_tokens(mem: Memory) -> int:
    report: ConversationReport = mem.add_conversation([("Priya", "I booked the flights.")], session_id="s1")
    return (report.llm or {}).get("prompt_tokens", 0) + report.turns


def correct(mem: Memory, entry_id: str) -> Entry:
    """`update`'s changes are typed keyword arguments (a misspelt one fails the check: tests/test_typing.py)."""
    return mem.update(entry_id, text="Priya booked the flights to Porto.", timestamp="2024-05-01", location=None)
