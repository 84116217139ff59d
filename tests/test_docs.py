"""The README and docs/ hold together (issue 44): every relative link reaches a file (and its
``#anchor`` a heading, as GitHub slugs it), every ``edge …`` command they name exists with the
options they give it — the CLI's own command tree is the source of truth — and ``edge --help``
shows each command's summary whole, on one line. Fast: click's command tree and runner, no
model is loaded."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from edge.cli import main
from tests.conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(```|~~~)")
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1", re.S)
GROUP_OPTIONS_WITH_VALUE = {"--memory", "--profile"}


def _prose_and_code(text: str) -> tuple[str, list[str]]:
    """The page's prose (fenced blocks blanked, line count kept) and its fenced lines."""
    prose, code, fenced = [], [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            prose.append("")
        elif fenced:
            code.append(line)
            prose.append("")
        else:
            prose.append(line)
    return "\n".join(prose), code


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its rendered text lowercased, punctuation dropped
    (letters, digits, ``_`` and ``-`` kept), each space a hyphen."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())  # a link's text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    prose, _ = _prose_and_code(page.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out = set()
    for line in prose.splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(page: Path) -> list[str]:
    prose, _ = _prose_and_code(page.read_text(encoding="utf-8"))
    prose = INLINE_CODE.sub(lambda m: " " * len(m.group(0)), prose)
    return [m.group(1) for m in LINK.finditer(prose)]


def test_the_pages_exist_and_the_readme_stays_short():
    names = {p.name for p in PAGES}
    assert {"index.md", "memory.md", "asking.md", "recording.md", "people.md", "profiles.md",
            "benchmarks.md", "errors.md", "design.md"} <= names
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 300
    assert (ROOT / "CHANGELOG.md").is_file()


def test_slugs_follow_github():
    assert slug("Daily use — chat") == "daily-use--chat"
    assert slug("Two tiers (`edge build`)") == "two-tiers-edge-build"
    assert slug("The llama.cpp build is most of the latency") == (
        "the-llamacpp-build-is-most-of-the-latency")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page):
    broken = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.name}")
    assert not broken, broken


# ------------------------------------------------------------------ commands named in the docs

def commands_named(page: Path) -> list[str]:
    """Every ``edge …`` command line of a page: fenced lines that start with ``edge`` and
    inline code spans that do (a span may wrap onto the next line)."""
    prose, code = _prose_and_code(page.read_text(encoding="utf-8"))
    found = []
    joined = "\n".join(code).replace("\\\n", " ")
    for line in joined.splitlines():
        line = line.strip().removeprefix("$ ")
        if line.startswith("edge "):
            found.append(line)
    for m in INLINE_CODE.finditer(prose):
        span = " ".join(m.group(2).split())
        if span == "edge" or span.startswith("edge "):
            found.append(span)
    return found


def _tokens(command: str) -> list[str]:
    command = re.split(r"\s#", command, maxsplit=1)[0]
    try:
        tokens = shlex.split(command)
    except ValueError:  # an unbalanced quote in prose: words are enough
        tokens = command.split()
    return [t.strip("[]") for t in tokens]


def _option_names(command: click.Command) -> set[str]:
    names = {"--help"}
    for param in command.params:
        if isinstance(param, click.Option):
            names.update(o for o in (*param.opts, *param.secondary_opts) if o.startswith("--"))
    return names


def resolve(line: str) -> tuple[tuple[str, ...], str | None]:
    """The command path ``line`` names (``("models", "add")``) and None when it exists with
    the options ``line`` gives it, else why not. Options before a command are its group's
    (``edge --memory FILE ask``); ``a|b`` names several subcommands (``edge models add|user``)."""
    tokens = _tokens(line)[1:]
    command: click.Command = main
    path: tuple[str, ...] = ()
    i = 0
    while i < len(tokens) and isinstance(command, click.Group):
        token = tokens[i]
        where = " ".join(("edge", *path))
        if token.startswith("--"):
            name = token.split("=", 1)[0]
            if name not in _option_names(command):
                return path, f"{line!r}: {where} has no option {name}"
            i += 2 if name in GROUP_OPTIONS_WITH_VALUE and "=" not in token else 1
            continue
        if token in ("...", "…"):
            break
        names = token.split("|")
        missing = [n for n in names if n not in command.commands]
        if missing:
            return path, f"{line!r}: {where} has no command {missing[0]!r}"
        command = command.commands[names[0]]
        path = (*path, names[0])
        i += 1
    if isinstance(command, click.Group):
        return path, None  # a group named alone, or with --help
    known = _option_names(command)
    for token in tokens[i:]:
        for name in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", token):
            if name not in known:
                return path, f"{line!r}: {' '.join(('edge', *path))} has no option {name}"
    return path, None


def check_command(line: str) -> str | None:
    """None when ``line`` names a command of ``edge`` with options it has, else why."""
    return resolve(line)[1]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_edge_command_named_exists(page):
    named = commands_named(page)
    wrong = [why for why in map(check_command, named) if why]
    assert not wrong, wrong


def test_the_command_check_catches_what_does_not_exist():
    assert check_command("edge ask --at 'DAY1 11:21' \"where?\"") is None
    assert check_command("edge --profile small bench qa --questions hard --split dev") is None
    assert check_command("edge --memory DEST ask ...") is None
    assert check_command("edge record --no-pyramid") is None
    assert check_command("edge models add|verify|user") is None
    assert "no command 'aks'" in check_command("edge aks 'where?'")
    assert "no command 'remove'" in check_command("edge models remove x")
    assert "no option --frobnicate" in check_command("edge ask --frobnicate 'where?'")
    assert "no option --at" in check_command("edge stats --at DAY1")


def _paths(command: click.Command, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [path] if path else []
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            out += _paths(sub, (*path, name))
    return out


def test_the_readme_names_every_command():
    named = set()
    for line in commands_named(ROOT / "README.md"):
        path = resolve(line)[0]
        named.update(path[:n] for n in range(1, len(path) + 1))
    missing = [" ".join(p) for p in _paths(main) if p not in named]
    assert not missing, f"README.md's commands table lacks: {missing}"


# ------------------------------------------------------------------ edge --help, whole summaries

def _help_pages() -> list[tuple[str, str]]:
    runner = CliRunner()
    pages = []
    for path in [(), *[p for p in _paths(main) if isinstance(_command(p), click.Group)]]:
        result = runner.invoke(main, [*path, "--help"], terminal_width=80)
        assert result.exit_code == 0, result.output
        pages.append((" ".join(("edge", *path)), result.output))
    return pages


def _command(path: tuple[str, ...]) -> click.Command:
    command = main
    for name in path:
        command = command.commands[name]
    return command


def test_help_shows_each_summary_whole_on_one_line():
    for name, out in _help_pages():
        listed = out[out.index("Commands:"):].splitlines()[1:]
        rows = [line for line in listed if line.strip()]
        group = _command(tuple(name.split()[1:]))
        assert [row.split()[0] for row in rows] == sorted(group.commands), (name, rows)
        for row in out.splitlines()[1:]:  # after "Usage: … [ARGS]...", click's own form
            assert not row.rstrip().endswith(("...", "…")), f"{name} --help: {row!r}"
        for row in rows:
            summary = row.split(None, 1)[1]
            assert summary.endswith((".", ")")), f"{name} --help: {row!r}"
