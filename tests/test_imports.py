"""The import contract: dependencies point one way, ``tui → edge → models``; ``edge`` never
loads Textual; ``models`` never imports ``edge`` or ``tui``; inside ``edge`` no stage
imports a stage above it (cli; bench, record, report; answer; ingest, recall; build; store;
the shared vocabulary) and recall never imports the write path; and there is no import
circle anywhere in ``edge``, ``models`` or ``tui``.

Checked statically by import-linter (the contracts in pyproject.toml, function-level and
``TYPE_CHECKING`` imports included), module by module with grimp for circles, and at run
time by importing the headless entry points in a fresh interpreter and looking at
``sys.modules``.
"""

from __future__ import annotations

import ast
import json
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


CONTRACTS = 6
"""The contracts in pyproject.toml: layers, edge-headless, models-alone, stages,
recall-reads, acyclic."""

# A module-level cycle finder run in a fresh interpreter in ``cwd`` (so a copy of the
# packages there is the one grimp reads): every strongly connected set of two or more
# modules of edge, models, tui or quantize (whose converters share quantize/common.py rather
# than each other's helpers), with the imports inside it.
_CIRCLES = """
import json, grimp
g = grimp.build_graph("edge", "models", "tui", "quantize", cache_dir=None)
mods = sorted(g.modules)
out = {m: sorted(g.find_modules_directly_imported_by(m)) for m in mods}
index, low, stack, on, found = {}, {}, [], set(), []
def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on.add(v)
    for w in out[v]:
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        scc = []
        while True:
            w = stack.pop()
            on.discard(w)
            scc.append(w)
            if w == v:
                break
        if len(scc) > 1:
            found.append(sorted(f"{a} -> {b}" for a in scc for b in out[a] if b in scc))
import sys
sys.setrecursionlimit(10_000)
for m in mods:
    if m not in index:
        visit(m)
print(json.dumps(found))
"""


def import_circles(cwd: Path) -> list[list[str]]:
    """The import circles between modules of edge, models, tui and quantize in ``cwd``: each
    a list of ``importer -> imported`` lines (package ``__init__``s are modules too, so a child
    importing its package's ``__init__`` that imports the child is a circle)."""
    out = subprocess.run([sys.executable, "-c", _CIRCLES], cwd=cwd, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_linter_contracts_are_kept():
    out = lint_imports(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"Contracts: {CONTRACTS} kept, 0 broken." in out.stdout, out.stdout


def test_no_import_circle_between_any_two_modules():
    """Module by module, function-level and ``TYPE_CHECKING`` imports included: no import
    circle (the acyclic contract squashes packages; this also sees a package ``__init__``)."""
    assert import_circles(ROOT) == []


def _copy_packages(tmp_path: Path) -> Path:
    for pkg in ("edge", "models", "tui", "quantize"):
        shutil.copytree(ROOT / pkg, tmp_path / pkg,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


def test_the_contracts_catch_each_kind_of_bad_import(tmp_path):
    """The same contracts on a copy of the three packages with bad modules added: each
    contract reports its own violation (so none of them passes vacuously), and the module
    check sees the circle."""
    root = _copy_packages(tmp_path)
    bad = {"models/_upward.py": "from edge import store\n",
           "edge/cli/_ui.py": "def show():\n    import textual\n",
           "edge/cli/_chat.py": "import tui.session\n",
           "edge/store/_upward.py": "from edge.answer import ask\n",
           "edge/recall/_writes.py": "from edge.build.keys import extract_keys\n",
           "edge/answer/_a.py": "from edge.answer import _b\n",
           "edge/answer/_b.py": "def later():\n    from edge.answer import _a\n"}
    for path, text in bad.items():
        (root / path).write_text(text)
    out = lint_imports(root)
    assert out.returncode == 1, out.stdout
    assert f"Contracts: 0 kept, {CONTRACTS} broken." in out.stdout, out.stdout
    for line in ("models._upward -> edge.store", "edge.cli._ui -> textual",
                 "edge.cli._chat -> tui.session", "edge.store._upward -> edge.answer",
                 "edge.recall._writes -> edge.build.keys", "No cycles are allowed in edge.answer."):
        assert line in out.stdout, out.stdout
    assert import_circles(root) == [["edge.answer._a -> edge.answer._b",
                                     "edge.answer._b -> edge.answer._a"]]


def test_a_module_at_edges_root_must_be_given_a_stage(tmp_path):
    """The stages contract is exhaustive: a new module beside errors.py and config.py that
    no layer names breaks it, so the folder list keeps saying which stage a file serves."""
    root = _copy_packages(tmp_path)
    (root / "edge" / "loose.py").write_text("X = 1\n")
    out = lint_imports(root)
    assert out.returncode == 1, out.stdout
    assert f"Contracts: {CONTRACTS - 1} kept, 1 broken." in out.stdout, out.stdout
    assert "edge.loose" in out.stdout, out.stdout


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
