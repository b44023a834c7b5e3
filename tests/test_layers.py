"""The packages import one way: records below reports, reports below lanes, lanes below the command line.

Every module of farm/, host_agent/ and web_bench/ is parsed (not imported), and every import in it counts:
module level, inside functions, under `if TYPE_CHECKING:`, `import a.b`, `from a import b` and relative forms.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("farm", "host_agent", "web_bench")
"""The top-level packages whose modules are checked."""

BASE = ("farm.manifest", "farm.errors", "farm.exits", "farm.fsutil", "farm.names")
"""The neutral modules every layer may import: they import only each other, `farm.redact` and `farm` itself."""
BASE_MAY_IMPORT = (*BASE, "farm.redact")


def _farm_parts() -> list[str]:
    """Every top-level module and package of farm (`farm.results`, `farm.exits`, ...)."""
    farm = ROOT / "farm"
    modules = [p.stem for p in farm.glob("*.py") if p.name != "__init__.py"]
    packages = [p.name for p in farm.iterdir() if (p / "__init__.py").is_file()]
    return sorted(f"farm.{name}" for name in modules + packages)


_ABOVE_BASE = tuple(p for p in _farm_parts() if p not in BASE_MAY_IMPORT) + ("host_agent", "web_bench")

FORBIDDEN: dict[str, tuple[str, ...]] = {
    # Nothing but the command line imports the command line (a package may always import itself).
    "farm": ("farm.cli",),
    "host_agent": ("farm.cli",),
    "web_bench": ("farm.cli",),
    # Records know neither the reports built from them nor the lanes that write them.
    "farm.results": ("farm.report", "farm.scoring", "farm.sweep", "farm.android", "farm.cli", "farm.view",
                     "web_bench", "host_agent"),
    # The phones' lane is driven by the sweep, not the other way round.
    "farm.android": ("farm.sweep", "farm.cli"),
    # Reports read records; lanes plug their sections in through a registry.
    "farm.report": ("farm.cli", "farm.view", "farm.sweep", "web_bench", "farm.desktop"),
    **{base: _ABOVE_BASE for base in BASE},
}
"""Importing package (and everything under it) → packages it must not import."""


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def module_name(path: Path, root: Path = ROOT) -> str:
    """`farm/results/duck.py` → `farm.results.duck`; a package's `__init__.py` is the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(source: str, module: str, *, is_package: bool = False, filename: str = "<source>") -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in a module's source, wherever it is in the module.

    `from a import b` counts as both `a` and `a.b` (b may be a submodule); relative imports are resolved
    against the module's package."""
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found += [(node.lineno, target)] + [(node.lineno, f"{target}.{a.name}") for a in node.names]
    return found


def forbidden_edges(source: str, module: str, *, is_package: bool = False,
                    filename: str = "<source>") -> list[str]:
    """`file:line: importer imports imported` for every import of `source` that FORBIDDEN rules out."""
    banned = {b for importer, bs in FORBIDDEN.items() if _within(module, importer) for b in bs}
    banned = {b for b in banned if not _within(module, b)}
    reported: list[tuple[int, str]] = []
    for line, imported in sorted(set(imports(source, module, is_package=is_package, filename=filename))):
        # `from farm.report import model` is one edge (farm.report), not two.
        if any(b == line and _within(imported, seen) for b, seen in reported):
            continue
        if any(_within(imported, b) for b in banned):
            reported.append((line, imported))
    return [f"{filename}:{line}: {module} imports {imported}" for line, imported in reported]


def calls_import_module(source: str, filename: str = "<source>") -> list[int]:
    """Lines where a module loads another by name through `importlib.import_module` (imported or called)."""
    lines = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Attribute) and node.attr == "import_module":
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "importlib" \
                and any(a.name == "import_module" for a in node.names):
            lines.append(node.lineno)
    return sorted(set(lines))


def _modules(*tops: str) -> list[Path]:
    found = sorted(p for top in tops for p in (ROOT / top).rglob("*.py"))
    assert len(found) > 50, f"the sources were not found under {ROOT}"
    return found


def test_the_packages_import_one_way() -> None:
    offending = [
        edge
        for path in _modules(*SOURCES)
        for edge in forbidden_edges(path.read_text(encoding="utf-8"), module_name(path),
                                    is_package=path.name == "__init__.py", filename=str(path.relative_to(ROOT)))
    ]
    assert offending == [], "imports against the layer order (see FORBIDDEN in tests/test_layers.py):\n" + "\n".join(
        offending)


def test_every_rule_names_packages_that_exist() -> None:
    # A renamed package must not leave a rule that silently checks nothing.
    known = set(_farm_parts()) | {"farm", "host_agent", "web_bench"}
    named = set(FORBIDDEN) | {b for banned in FORBIDDEN.values() for b in banned}
    assert named - known == set()


def test_the_checker_finds_forbidden_imports_in_every_form() -> None:
    source = (
        "import farm.report.model\n"
        "from farm import scoring\n"
        "from ..sweep.request import SweepRequest\n"
        "def f():\n    from farm.android.paths import raw_dir\n"
        "import farm.cli as cli\n"
        "if True:\n    import web_bench.paired.lane\n"
        "from farm.results import duck\n"
        "from . import stats\n"
        "from farm.errors import FarmError\n"
    )
    edges = forbidden_edges(source, "farm.results.example", filename="example.py")
    assert [int(e.split(":")[1]) for e in edges] == [1, 2, 3, 5, 6, 8]
    assert edges[0] == "example.py:1: farm.results.example imports farm.report.model"


def test_the_checker_lets_allowed_imports_pass() -> None:
    assert forbidden_edges("from farm.results import duck\nfrom farm.report import model\n", "farm.report.x") == []
    assert forbidden_edges("from farm.cli import main\nfrom . import app\n", "farm.cli.report") == []
    assert forbidden_edges("from farm import __version__\nfrom farm.redact import redact\n", "farm.manifest") == []


def test_the_base_modules_import_no_layer() -> None:
    edges = forbidden_edges("from farm.results.record import Record\n", "farm.manifest")
    assert edges == ["<source>:1: farm.manifest imports farm.results.record"]
    assert forbidden_edges("from farm.cli import main\n", "host_agent.loop") != []


def test_the_checker_resolves_relative_imports_in_a_package_init() -> None:
    edges = forbidden_edges("from .store import x\nfrom ..report import build\n", "farm.results", is_package=True)
    assert edges == ["<source>:2: farm.results imports farm.report"]


def test_the_import_module_check_sees_both_spellings() -> None:
    source = "import importlib\nimportlib.import_module('m')\nfrom importlib import import_module\nimport json\n"
    assert calls_import_module(source) == [2, 3]


def test_no_module_loads_another_by_name() -> None:
    # Lanes plug in through a registry the caller fills, so every dependency is an import the checks above see.
    offending = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in _modules("farm", "web_bench")
        for line in calls_import_module(path.read_text(encoding="utf-8"), str(path))
    ]
    assert offending == [], "importlib.import_module hides a dependency from the layer checks:\n" + "\n".join(
        offending)
