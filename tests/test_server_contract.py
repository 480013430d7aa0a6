"""Contract fuzzing with schemathesis against the live OpenAPI document of a server on
loopback: a bounded number of generated requests per operation, no 500s, and every response
matches the schema the document gives for it."""

from __future__ import annotations

from pathlib import Path

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402

from test_server import Running  # noqa: E402

# /v1/import's body is JSONL text: generated strings are sent as they are, as text/plain would be.
schemathesis.serializer.alias("application/x-ndjson", "text/plain")


def test_live_openapi_contract(tmp_path: Path) -> None:
    running = Running(tmp_path / "contract.db")
    try:
        with running.client() as http:
            http.post("/v1/memories", json={"entries": ["Alice lives in Lisbon.", "Bob likes tea."]})
        schema = schemathesis.openapi.from_url(f"{running.url}/openapi.json")
        checked: list[str] = []
        calls: dict[int, int] = {}
        for result in schema.get_all_operations():
            operation = result.ok()

            @settings(max_examples=20, deadline=None, derandomize=True, database=None,
                      suppress_health_check=list(HealthCheck))
            @given(case=operation.as_strategy())
            def check(case) -> None:  # type: ignore[no-untyped-def]
                response = case.call(base_url=running.url)
                calls[response.status_code] = calls.get(response.status_code, 0) + 1
                assert response.status_code < 500, (case.method, case.path, response.status_code, response.text[:300])
                case.validate_response(response, checks=(schemathesis.checks.response_schema_conformance,))

            check()
            checked.append(f"{operation.method.upper()} {operation.path}")
        assert len(checked) >= 12, checked
        assert sum(calls.values()) >= 100 and any(code < 300 for code in calls), calls
    finally:
        running.stop()
