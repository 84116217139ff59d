"""The import contract: dependencies point one way, ``tui → edge → models``; ``edge`` never
loads Textual; ``models`` never imports ``edge`` or ``tui``.

Checked twice: statically by import-linter (the contracts in pyproject.toml, function-level
imports included) and at run time by importing the headless entry points in a fresh
interpreter and looking at ``sys.modules``.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UI = ("textual", "textual_image", "tui")


def lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` (import-linter, the ``test`` extra) on the pyproject.toml in ``cwd``."""
    exe = Path(sys.executable).with_name("lint-imports")
    cmd = str(exe) if exe.exists() else shutil.which("lint-imports")
    assert cmd, "lint-imports not found: pip install -e '.[test]' (import-linter)"
    return subprocess.run([cmd, "--no-cache"], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_import_linter_contracts_are_kept():
    out = lint_imports(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Contracts: 3 kept, 0 broken." in out.stdout, out.stdout


def test_the_contracts_catch_an_upward_import_and_textual_in_edge(tmp_path):
    """The same contracts on a copy of the three packages with three bad modules added:
    each contract reports its own violation (so none of them passes vacuously)."""
    for pkg in ("edge", "models", "tui"):
        shutil.copytree(ROOT / pkg, tmp_path / pkg,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    (tmp_path / "models" / "_upward.py").write_text("from edge import store\n")
    (tmp_path / "edge" / "_ui.py").write_text("def show():\n    import textual\n")
    (tmp_path / "edge" / "_chat.py").write_text("import tui.session\n")
    out = lint_imports(tmp_path)
    assert out.returncode == 1 and "Contracts: 0 kept, 3 broken." in out.stdout, out.stdout
    for line in ("models._upward -> edge.store", "edge._ui -> textual",
                 "edge._chat -> tui.session"):
        assert line in out.stdout, out.stdout


def test_the_only_edge_to_tui_import_is_the_lazy_chat_launch():
    """The import the contracts ignore: one ``from tui... import`` in the CLI (a module now,
    a package later), inside a function, so Textual loads only for ``edge chat``."""
    import grimp

    graph = grimp.build_graph("edge", "tui", cache_dir=None)
    found = []
    for importer in sorted(m for m in graph.modules if m.split(".")[0] == "edge"):
        for imported in graph.find_modules_directly_imported_by(importer):
            if imported.split(".")[0] == "tui":
                found += graph.get_import_details(importer=importer, imported=imported)
    assert len(found) == 1, found
    (imp,) = found
    assert imp["importer"] == "edge.cli" or imp["importer"].startswith("edge.cli."), imp
    module = ROOT.joinpath(*imp["importer"].split("."))
    source = module / "__init__.py" if module.is_dir() else module.with_suffix(".py")
    tree = ast.parse(source.read_text())
    enclosing = [node.name for node in ast.walk(tree)
                 if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                 and node.lineno < imp["line_number"] <= node.end_lineno]
    assert enclosing, f"{imp} is a module-level import: Textual would load with the CLI"


def _modules_after_import(code: str) -> list[str]:
    """Top-level packages of ``UI`` plus edge/models in ``sys.modules`` after ``code`` runs
    in a fresh interpreter."""
    probe = (code + "\nimport sys\n"
             "print(sorted({m.split('.')[0] for m in sys.modules}"
             " & {'textual', 'textual_image', 'tui', 'edge', 'models'}))\n")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return ast.literal_eval(out.stdout.strip().splitlines()[-1])


def test_headless_entry_points_leave_textual_unloaded():
    """``edge.cli`` (with ``--help`` of every command but chat run) and ``edge.record``, and
    every other edge module, import without Textual or tui."""
    loaded = _modules_after_import(
        "import pkgutil, edge, edge.cli, edge.record\n"
        "for m in pkgutil.walk_packages(edge.__path__, 'edge.'):\n"
        "    if not m.name.endswith('__main__'):  # runs the CLI\n"
        "        __import__(m.name)\n"
        "from edge.cli import main\n"
        "for cmd in sorted(set(main.commands) - {'chat'}):\n"
        "    main([cmd, '--help'], standalone_mode=False)\n")
    assert loaded == ["edge", "models"]


def test_models_imports_without_edge_or_tui():
    loaded = _modules_after_import(
        "import pkgutil, models\n"
        "for m in pkgutil.walk_packages(models.__path__, 'models.'):\n"
        "    if not m.name.endswith('__main__'):  # runs python -m models\n"
        "        __import__(m.name)\n")
    assert loaded == ["models"]
