"""The package type-checks: mypy over `src/engramdb` with the settings in pyproject.toml
(`[tool.mypy]`) reports no error, so a change that breaks the typed public API or an
internal contract fails the test suite (and CI) rather than a user."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_reports_no_errors(tmp_path: Path) -> None:
    api = pytest.importorskip("mypy.api", reason="mypy is a test extra: pip install -e '.[test]'")
    stdout, stderr, status = api.run(["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir",
                                      str(tmp_path / "mypy-cache"), str(ROOT / "src" / "engramdb")])
    assert status == 0, stdout + stderr
    assert "Success: no issues found" in stdout


def test_user_code_type_checks_strictly(tmp_path: Path) -> None:
    """tests/typed_usage.py, written as a user would, passes ``mypy --strict``: hits and entries are typed when a
    result or a page is iterated, indexed or sliced (they were Any), and `Page` is importable from engramdb."""
    api = pytest.importorskip("mypy.api", reason="mypy is a test extra: pip install -e '.[test]'")
    stdout, stderr, status = api.run(["--strict", "--python-version", "3.11", "--cache-dir",
                                      str(tmp_path / "mypy-cache"), "--follow-imports", "silent",
                                      str(ROOT / "tests" / "typed_usage.py")])
    assert status == 0, stdout + stderr


def test_a_misspelt_or_mistyped_update_fails_the_users_type_check(tmp_path: Path) -> None:
    """`Memory.update(entry_id, **changes: Any)` let `txt=` and `timestamp=12345` through a strict
    check, to fail only at run time."""
    api = pytest.importorskip("mypy.api", reason="mypy is a test extra: pip install -e '.[test]'")
    user = tmp_path / "user_code.py"
    user.write_text("from engramdb import Memory\n\n\ndef fix(mem: Memory, i: str) -> None:\n"
                    "    mem.update(i, txt='x')\n    mem.update(i, timestamp=12345)\n", encoding="utf-8")
    stdout, _, status = api.run(["--strict", "--python-version", "3.11", "--cache-dir", str(tmp_path / "mypy-cache"),
                                 "--follow-imports", "silent", str(user)])
    assert status == 1 and 'Unexpected keyword argument "txt"' in stdout and "timestamp" in stdout, stdout


def test_typed_usage_runs(tmp_path: Path) -> None:
    """The same file works at run time (a page is indexable and sliceable like a search result)."""
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import typed_usage
    finally:
        sys.path.remove(str(ROOT / "tests"))
    from engramdb import Memory

    with Memory(tmp_path / "typed.db", embedder="minilm") as mem:
        mem.add(["Priya booked the flights to Lisbon.", "Tom repainted the kitchen.", "The flights leave at nine."])
        assert typed_usage.best_hit(mem).text
        assert typed_usage.top_texts(mem)
        first, rest, cursor = typed_usage.first_page(mem)
        assert first.text and len(rest) == 2 and cursor is None
        assert typed_usage.report_tokens(mem) == 1
        flights = mem.search("Priya booked the flights", k=1)[0].id
        assert typed_usage.correct(mem, flights).text.endswith("Porto.")
