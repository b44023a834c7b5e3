"""`farm/results/` knows records, not lanes: no module of it imports a lane's package."""

from __future__ import annotations

import ast
from pathlib import Path

import farm.results

LANES = ("farm.android", "farm.sweep")
"""Packages whose layouts results must not know: lanes hand records (and their evidence paths) to results."""


def _imports(path: Path, package: str) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in a module, wherever it is (also inside functions)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # `from farm import android` imports the package as a name.
            found += [(node.lineno, module)] + [(node.lineno, f"{module}.{a.name}") for a in node.names]
    return found


def _is_lane(module: str) -> bool:
    return any(module == lane or module.startswith(lane + ".") for lane in LANES)


def test_no_results_module_imports_a_lane() -> None:
    root = Path(farm.results.__file__).parent
    modules = sorted(root.rglob("*.py"))
    assert len(modules) > 5, "the results package was not found"
    offending = [
        f"{path.relative_to(root.parent.parent)}:{line}: {module}"
        for path in modules
        for line, module in _imports(path, "farm.results")
        if _is_lane(module)
    ]
    assert offending == []


def test_the_import_check_sees_every_form_of_import(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "import farm.android.paths\n"
        "from farm import sweep\n"
        "from ..android.paths import raw_dir\n"
        "def f():\n    from farm.sweep.unit_run import try_dir\n"
        "from farm.results import duck\n",
        encoding="utf-8",
    )
    lanes = sorted({line for line, module in _imports(source, "farm.results") if _is_lane(module)})
    assert lanes == [1, 2, 3, 5]
