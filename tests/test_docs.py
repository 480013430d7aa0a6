"""The README's Python example runs as written and prints what it promises."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_example(tmp_path: Path):
    code = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)[0]
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
    lines = out.getvalue().splitlines()
    assert "Caroline went to an LGBTQ support group" in lines[0]  # best hit first
    assert "'lexical': (1," in lines[0]
    assert lines[-2] == "Release v2.3.1 fixed ERR_CONN_RESET."  # found through the filters
    assert lines[-1].startswith("项目 XYZ")
    assert (tmp_path / "agent.db").exists()


def run_guide_example(name: str, tmp_path: Path, block: int = 0) -> tuple[list[str], list[str]]:
    """Run a Python block (the first by default) of docs/`name` in `tmp_path`: (printed lines,
    the `print(...)  # expected` comments)."""
    guide = README.parent / "docs" / name
    code = re.findall(r"```python\n(.*?)```", guide.read_text(encoding="utf-8"), re.S)[block]
    expected = [m.group(1).strip() for m in re.finditer(r"^\s*print\(.*\)\s*#\s*(.*)$", code, re.M)]
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, name, "exec"), {})
    finally:
        os.chdir(cwd)
    return out.getvalue().splitlines(), expected


def test_conversation_guide_example_prints_what_its_comments_say(tmp_path: Path):
    """Each `print(...)  # expected` line of docs/CONVERSATIONS.md's example prints exactly that."""
    lines, expected = run_guide_example("CONVERSATIONS.md", tmp_path)
    assert len(lines) == len(expected) == 4
    assert lines[0] == expected[0] and lines[1] == expected[1] and lines[3] == expected[3]
    assert lines[2] == "2023-05-07T00:00:00+00:00 2023-05-08T00:00:00+00:00"


def test_lifecycle_guide_example_prints_what_its_comments_say(tmp_path: Path):
    """Each `print(...)  # expected` line of docs/LIFECYCLE.md's example prints exactly that."""
    lines, expected = run_guide_example("LIFECYCLE.md", tmp_path)
    assert lines == expected and len(expected) == 4


def test_lifecycle_guide_unlinked_example_prints_what_its_comment_says(tmp_path: Path):
    """docs/LIFECYCLE.md's second example: unlinked old and new statements, a question about now."""
    lines, expected = run_guide_example("LIFECYCLE.md", tmp_path, block=1)
    assert lines == expected == ["Changed my phone number to 0151 555 0199."]


def test_cli_guide_runnable_block(tmp_path: Path):
    """The block after `<!-- runnable -->` in docs/CLI.md runs as written, in a fresh folder."""
    import subprocess
    import sys

    guide = README.parent / "docs" / "CLI.md"
    block = re.search(r"<!-- runnable -->\n```bash\n(.*?)```", guide.read_text(encoding="utf-8"), re.S).group(1)
    script = f'set -euo pipefail\nengram() {{ "{sys.executable}" -m engramdb.cli "$@"; }}\n' + block
    env = {**os.environ, "ENGRAM_EMBEDDER": "minilm", "ENGRAM_DB": str(tmp_path / "engram.db")}
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert " 1. [" in out and "Alice moved to Lisbon." in out.split(" 1. [", 1)[1].splitlines()[0]
    assert "UPDATE alice" in " ".join(out.split()) and "deleted 1 expired entry" in out
    assert "imported alice.jsonl" in out and (tmp_path / "copy.db").exists()


def test_the_schema_versions_the_docs_name_are_the_stores(tmp_path: Path):
    """POSTGRES.md names the entry-format version both backends hold; it is the one they hold."""
    from engramdb import Memory
    from engramdb.store.base import SCHEMA_VERSION

    guide = (README.parent / "docs" / "POSTGRES.md").read_text(encoding="utf-8")
    named = re.search(r"`meta\.schema_version` is the same\s+entry-format version as the SQLite file's \((\d+)\)",
                      guide)
    assert named is not None and named.group(1) == SCHEMA_VERSION
    with Memory(tmp_path / "v.db") as mem:
        assert mem.stats()["schema_version"] == SCHEMA_VERSION
