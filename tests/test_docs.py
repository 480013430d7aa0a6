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
