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
