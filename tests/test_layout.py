"""The layout stays readable: no module over :data:`MAX_MODULE_LINES` lines and no function
(method, nested function) over :data:`MAX_FUNCTION_LINES` lines, from its ``def`` line to
its last (docstring included; a click command's option decorators are not counted), in the
shipped packages; and every package of edge says in its ``__init__``
docstring which stage it serves. Which stage may import which is the import contract's
(tests/test_imports.py)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("edge", "models", "tui", "quantize")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def sources() -> list[Path]:
    """Every ``.py`` file of :data:`PACKAGES`."""
    found = [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))
             if "__pycache__" not in p.parts]
    assert len(found) > 100, found  # the packages are there
    return found


def too_long(path: Path) -> list[str]:
    """What in ``path`` breaks the limits, one line each (``[]`` when nothing does)."""
    text = path.read_text()
    name = path.relative_to(ROOT)
    problems = []
    n = len(text.splitlines())
    if n > MAX_MODULE_LINES:
        problems.append(f"{name}: {n} lines (at most {MAX_MODULE_LINES})")
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                problems.append(f"{name}:{node.lineno} {node.name}(): {length} lines "
                                f"(at most {MAX_FUNCTION_LINES})")
    return problems


def test_no_module_over_400_lines_and_no_function_over_60():
    problems = [line for path in sources() for line in too_long(path)]
    assert problems == [], "\n".join(problems)


def test_the_check_sees_a_long_module_and_a_long_method(tmp_path):
    """The check itself: a 401-line module and a 61-line method (from ``def``, its
    decorator not counted) are reported; 400 and 60 are not."""
    body = "\n".join(f"        x = {i}" for i in range(58))
    method = f"    @staticmethod\n    def long():\n        '''Doc.'''\n{body}\n        return x\n"
    ok = f"class A:\n{method}"
    assert len(method.splitlines()) == 62  # the decorator + 61 lines
    long_file = tmp_path / "long.py"
    long_file.write_text(ok + "\n" * (401 - len(ok.splitlines())))
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        found = too_long(long_file)
        assert [p.split(":")[0] for p in found] == ["long.py", "long.py"], found
        assert "long(): 61 lines" in found[1], found
        short = tmp_path / "short.py"
        short.write_text(ok.replace("        x = 0\n", "") + "\n" * 10)
        assert too_long(short) == []
    finally:
        ROOT = saved


def test_every_edge_package_says_its_stage():
    """Each package under edge/ opens with a docstring (its stage or role in a sentence)."""
    missing = [str(init.relative_to(ROOT)) for init in sorted((ROOT / "edge").rglob("__init__.py"))
               if not ast.get_docstring(ast.parse(init.read_text()))]
    assert missing == [], missing
