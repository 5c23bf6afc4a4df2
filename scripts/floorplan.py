"""Print the code's floor plan: folders and their sizes, the largest files, imports hidden
inside functions, and which platform apps import which (issue 28's before/after figures).

    python scripts/floorplan.py
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("grader", "platform")


def python_files() -> list[Path]:
    return sorted(
        path
        for source in SOURCES
        for path in (ROOT / source).rglob("*.py")
        if "migrations" not in path.parts
    )


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def folder_sizes(files: list[Path]) -> Counter[str]:
    sizes: Counter[str] = Counter()
    for path in files:
        sizes[str(path.parent.relative_to(ROOT))] += line_count(path)
    return sizes


def imports_inside_functions(tree: ast.AST) -> int:
    def count(node: ast.AST, inside: bool) -> int:
        here = inside and isinstance(node, ast.Import | ast.ImportFrom)
        inside = inside or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        return here + sum(count(child, inside) for child in ast.iter_child_nodes(node))

    return count(tree, False)


def imported_modules(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def app_edges(files: list[Path]) -> set[tuple[str, str]]:
    apps = {path.name for path in (ROOT / "platform").iterdir() if path.is_dir()}
    edges: set[tuple[str, str]] = set()
    for path in files:
        parts = path.relative_to(ROOT).parts
        if parts[0] != "platform" or len(parts) < 3:
            continue
        for name in imported_modules(ast.parse(path.read_text(encoding="utf-8"))):
            target = name.split(".")[0]
            if target in apps and target != parts[1]:
                edges.add((parts[1], target))
    return edges


def main() -> int:
    files = python_files()
    print("## Folders (lines of Python, migrations left out)")
    for folder, lines in sorted(folder_sizes(files).items()):
        print(f"{lines:7d}  {folder}/")
    print("\n## Largest files")
    for lines, path in sorted(((line_count(p), p) for p in files), reverse=True)[:15]:
        print(f"{lines:7d}  {path.relative_to(ROOT)}")
    nested = {p: imports_inside_functions(ast.parse(p.read_text(encoding="utf-8"))) for p in files}
    print(f"\n## Imports inside functions: {sum(nested.values())}")
    for path, count in sorted(nested.items(), key=lambda item: -item[1]):
        if count:
            print(f"{count:7d}  {path.relative_to(ROOT)}")
    edges = app_edges(files)
    mutual = sorted((a, b) for a, b in edges if (b, a) in edges and a < b)
    print(f"\n## Platform apps that import each other: {len(mutual)}")
    for a, b in mutual:
        print(f"         {a} <-> {b}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
