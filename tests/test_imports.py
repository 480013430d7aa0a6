"""No import cycles between Engram's packages and top-level modules (counting every import:
module level, inside functions, and under TYPE_CHECKING), and production code never imports
the evaluation package."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "engramdb"


def unit(module: str) -> str:
    """`engramdb.store.sqlite` -> `store`; `engramdb.memory` -> `memory`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "engramdb"


def module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("engramdb")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("engramdb"):
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        if path.name == "__init__.py" and path.parent == SRC:
            continue  # the package facade re-exports everything
        source = unit(module_name(path))
        for target in imports_of(path):
            dest = unit(target)
            if dest not in (source, "engramdb"):
                edges.setdefault(source, set()).add(dest)
    return edges


def test_no_cycles_between_packages_and_modules() -> None:
    edges = graph()
    cycles = []

    def visit(node: str, path: list[str]) -> None:
        for nxt in sorted(edges.get(node, ())):
            if nxt in path:
                cycles.append(path[path.index(nxt):] + [nxt])
            elif len(path) < 12:
                visit(nxt, path + [nxt])

    for start in sorted(edges):
        visit(start, [start])
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles[:10])


def test_production_code_never_imports_eval() -> None:
    edges = graph()
    users = sorted(source for source, targets in edges.items() if "eval" in targets and source not in ("cli",))
    assert users == [], users
