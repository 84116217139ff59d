"""The ``edge`` command line (click): one group, a command per job, ``--json`` for scripts."""

from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path

import click

from edge import config

EXCERPT = 160


class _State:
    def __init__(self, memory: Path, profile: str) -> None:
        self.memory_path = memory
        self.profile_name = profile
        self._hub = None

    def hub(self):
        if self._hub is None:
            from models import ModelHub, load_manifest

            self._hub = ModelHub(load_manifest().profile(self.profile_name), config.models_dir())
        return self._hub

    def close(self) -> None:
        if self._hub is not None:
            self._hub.close()


def _known_errors() -> tuple[type[BaseException], ...]:
    from edge.answer import AskError
    from edge.captions import CaptionFileError
    from edge.media import MediaError
    from edge.store import StoreError
    from edge.timeline import TimeParseError
    from models import ConfigError, UnknownModelError, WeightsCorruptError, WeightsMissingError

    return (AskError, CaptionFileError, ConfigError, MediaError, StoreError, TimeParseError,
            UnknownModelError, WeightsCorruptError, WeightsMissingError)


class _Group(click.Group):
    """Turns the project's expected errors into one clear line and exit code 1."""

    def invoke(self, ctx: click.Context):
        import apsw

        try:
            return super().invoke(ctx)
        except _known_errors() as e:
            raise click.ClickException(str(e)) from None
        except apsw.Error as e:
            from edge.store import write_error

            state = ctx.find_object(_State)
            raise click.ClickException(str(write_error(state.memory_path, e))) from None


@click.group(cls=_Group)
@click.option("--memory", "memory", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Memory file (default: $EDGE_MEMORY or the user data dir).")
@click.option("--profile", default=None,
              help="Model profile: tiny (default) or small; $EDGE_PROFILE.")
@click.version_option(package_name="edge-memory")
@click.pass_context
def main(ctx: click.Context, memory: Path | None, profile: str | None) -> None:
    """edge: on-device episodic memory of what you saw and heard.

    \b
      edge ingest VIDEO_OR_FOLDER...     turn footage into memory
      edge ask "where did I leave the keys?"
      edge doctor                        check every model role
    """
    state = _State(memory or config.default_memory_path(), profile or config.default_profile())
    ctx.obj = state
    ctx.call_on_close(state.close)


def _memory_options(fn):
    """``--memory``/``--profile`` on a command too (``edge ask --memory day1.db ...``)."""

    def set_memory(ctx: click.Context, _param, value):
        if value is not None:
            ctx.find_object(_State).memory_path = value
        return value

    def set_profile(ctx: click.Context, _param, value):
        if value is not None:
            ctx.find_object(_State).profile_name = value
        return value

    fn = click.option("--profile", default=None, expose_value=False, callback=set_profile,
                      help="Model profile (tiny, small).")(fn)
    return click.option("--memory", type=click.Path(dir_okay=False, path_type=Path),
                        default=None, expose_value=False, callback=set_memory,
                        help="Memory file (overrides the group option).")(fn)


def _open_memory(state: _State, create: bool):
    from edge.store import Memory

    return Memory(state.memory_path, create=create)


def _progress(total: float, unit: str, desc: str):
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, dynamic_ncols=True,
                bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f} {unit} [{elapsed}<{remaining}]")


# ---- ingest ------------------------------------------------------------------------------

def _pyramid_options(fn):
    """PyraVid pyramid switches shared by ``ingest`` and ``ingest-captions``."""
    opts = [
        click.option("--pyramid/--no-pyramid", "pyramid", default=True, show_default=True,
                     help="Build the PyraVid pyramid (facts, clip and global nodes, links): "
                          "one memory-LLM call per clip for keys+facts+summary. --no-pyramid: "
                          "keys only (cheaper)."),
        click.option("--links/--no-links", "links", default=True, show_default=True,
                     help="Judge relational fact links with the memory LLM (one more call "
                          "per clip that has similar earlier facts)."),
        click.option("--max-candidates", type=click.IntRange(1, 30), default=6,
                     show_default=True, help="Fact pairs judged per clip (relational links)."),
        click.option("--global-every", type=click.IntRange(1, 1000), default=20,
                     show_default=True, help="Clips per update of a day's global node (K)."),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def _make_pyramid(memory, hub, pyramid: bool, links: bool, max_candidates: int,
                  global_every: int):
    if not pyramid:
        return None
    from edge.pyramid import Pyramid, PyramidOptions

    return Pyramid(memory, hub, PyramidOptions(links=links, max_candidates=max_candidates,
                                               global_every=global_every))


@main.command()
@_memory_options
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--start", default=None, metavar="TIME",
              help="Start time for files whose metadata has none, e.g. '2025-02-20 19:30' or "
                   "'DAY1 11:00' (later files follow back to back). Default: file mtime.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON report.")
@_pyramid_options
@click.pass_obj
def ingest(state: _State, paths: tuple[Path, ...], start: str | None, as_json: bool,
           pyramid: bool, links: bool, max_candidates: int, global_every: int) -> None:
    """Turn videos (files or folders) into episodic memory: 30 s clips, captions, keys."""
    from edge.ingest import IngestOptions, ingest_paths
    from edge.timeline import parse_moment

    options = IngestOptions(start=parse_moment(start) if start else None)
    for p in paths:
        if not p.exists():
            raise click.ClickException(f"{p}: no such file or folder")
    bar = None

    def on_total(total: float) -> None:
        nonlocal bar
        bar = _progress(total, "s", "ingest")

    def on_progress(name: str, seconds: float) -> None:
        bar.set_description(name[:30])
        bar.update(seconds)

    with _open_memory(state, create=True) as memory:
        hub = state.hub()
        try:
            report = ingest_paths(memory, hub, paths, options, on_progress=on_progress,
                                  on_total=on_total,
                                  pyramid=_make_pyramid(memory, hub, pyramid, links,
                                                        max_candidates, global_every))
        except KeyboardInterrupt:
            click.echo("\nInterrupted. Every clip stored so far is kept; run the same command "
                       "again to resume where it stopped.", err=True)
            raise SystemExit(130) from None
        finally:
            if bar is not None:
                bar.close()
            memory.record_calls("ingest", hub.usage.records)
        stats = memory.stats()
    if as_json:
        click.echo(json.dumps({**report.as_dict(), "memory": str(state.memory_path),
                               "memory_stats": stats}, indent=2, ensure_ascii=False))
        if any(r.status == "failed" for r in report.results):
            raise SystemExit(1)
        return
    for r in report.results:
        mark = {"ingested": "+", "resumed": "+", "skipped": "=", "failed": "!"}[r.status]
        line = f" {mark} {r.status:8} {Path(r.path).name}"
        if r.status in ("ingested", "resumed"):
            line += f"  {r.clips_added} clips, {r.duration:.0f} s"
        if r.message:
            line += f"  ({r.message})"
        click.echo(line)
        for w in r.warnings:
            click.echo(f"     note: {w}")
    u = report.usage["llm"]
    failed = [r for r in report.results if r.status == "failed"]
    click.echo(f"{report.clips_added} clips added in {report.seconds:.1f} s; "
               f"{u['calls']} LLM calls, {u['tokens_in']} tokens in / {u['tokens_out']} out. "
               f"Memory: {state.memory_path} ({stats['clips']} clips, {stats['hours']:.2f} h).")
    if failed:
        click.echo(f"{len(failed)} file(s) could not be ingested; see the lines marked '!'.")
        raise SystemExit(1)


@main.command("ingest-captions")
@_memory_options
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--extract-keys", is_flag=True,
              help="Extract the four keys with the memory LLM instead of using the file's.")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="Only the first N records (a later run without it adds the rest).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON report.")
@_pyramid_options
@click.pass_obj
def ingest_captions(state: _State, file: Path, extract_keys: bool, limit: int | None,
                    as_json: bool, pyramid: bool, links: bool, max_candidates: int,
                    global_every: int) -> None:
    """Build memory from a caption file (EgoLife/MERIT JSON: captions given, no video)."""
    from edge.captions import ingest_caption_file, read_caption_file

    records = read_caption_file(file)  # a bad file fails here, before a memory is created
    t0 = time.perf_counter()
    bar = None

    def on_total(n: int) -> None:
        nonlocal bar
        bar = _progress(n, "clips", "captions")

    with _open_memory(state, create=True) as memory:
        hub = state.hub()
        mark = hub.usage.mark()
        try:
            result = ingest_caption_file(
                memory, hub, file, records=records, extract=extract_keys, limit=limit,
                on_total=on_total, on_progress=lambda n: bar.update(n) if bar else None,
                pyramid=_make_pyramid(memory, hub, pyramid, links, max_candidates,
                                      global_every))
        finally:
            if bar is not None:
                bar.close()
            memory.record_calls("ingest-captions", hub.usage.records[mark:])
        stats = memory.stats()
        usage = hub.usage.summary(mark)
    out = {"source": result.__dict__, "seconds": round(time.perf_counter() - t0, 2),
           "usage": usage, "memory": str(state.memory_path), "memory_stats": stats}
    if as_json:
        click.echo(json.dumps(out, indent=2, ensure_ascii=False))
        return
    click.echo(f"{result.status}: {file.name}, {result.clips_added} clips added"
               + (f" ({result.message})" if result.message else "")
               + f" in {out['seconds']:.1f} s. Memory: {state.memory_path} "
               f"({stats['clips']} clips, days {', '.join(stats['days'])}).")


# ---- ask ---------------------------------------------------------------------------------

@main.command()
@_memory_options
@click.argument("question")
@click.option("--at", "at", default=None, metavar="TIME",
              help="When the question is asked ('DAY1 11:21', '2025-02-20 19:40'); only "
                   "earlier clips are used. Default: now.")
@click.option("--top-n", type=click.IntRange(1, 50), default=5, show_default=True,
              help="Anchor clips per round.")
@click.option("--delta", type=click.IntRange(0, 4), default=2, show_default=True,
              help="Neighbor window Δ (clips on each side).")
@click.option("--rounds", type=click.IntRange(1, 5), default=5, show_default=True,
              help="Most retrieval rounds R.")
@click.option("--retrieval", type=click.Choice(["hybrid", "keys"]), default="hybrid",
              show_default=True,
              help="hybrid: MERIT max-sim over the four keys fused (RRF, k=60) with BM25 over "
                   "captions, transcripts and keys; keys: max-sim only.")
@click.option("--filter/--no-filter", "neighbor_filter", default=False, show_default=True,
              help="MERIT neighbor filtering: one more LLM call per round distils each "
                   "anchor's ±Δ neighborhood to what is relevant.")
@click.option("--choices", default=None, metavar="A|B|C|D",
              help="Multiple choice: options separated by '|'; the answer is one letter.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the answer, moments and usage as JSON.")
@click.pass_obj
def ask(state: _State, question: str, at: str | None, top_n: int, delta: int, rounds: int,
        retrieval: str, neighbor_filter: bool, choices: str | None, as_json: bool) -> None:
    """Answer a question from memory and cite the moments it relied on."""
    from edge.answer import ask as run_ask
    from edge.timeline import parse_moment

    at_t = parse_moment(at) if at else None
    with _open_memory(state, create=False) as memory:
        hub = state.hub()
        result = run_ask(memory, hub, question, at=at_t, top_n=top_n, delta=delta,
                         max_rounds=rounds, retrieval=retrieval,
                         neighbor_filter=neighbor_filter,
                         choices=[c.strip() for c in choices.split("|")] if choices else None)
        memory.record_calls("ask", hub.usage.records)
    if as_json:
        click.echo(json.dumps(result.as_dict(), indent=2, ensure_ascii=False))
        return
    answer = result.answer or "(no answer)"
    if result.extra.get("choices") and result.answer:
        answer = (f"{result.answer}. {result.extra['choices'][result.answer]} — "
                  f"{result.extra['reason']}")
    click.echo(f"Answer: {answer}")
    if result.note:
        click.echo(f"Note: {result.note}")
    u = result.usage["llm"]
    click.echo(f"({len(result.rounds)} round(s), {u['calls']} LLM call(s), {u['tokens_in']} "
               f"tokens in / {u['tokens_out']} out, {result.seconds:.1f} s)")
    click.echo("\nMoments (* = cited by the answer):")
    width = 100
    for m in result.moments:
        star = "*" if m.cited else " "
        score = f" score {m.score:.3f} via {m.matched}" if m.score is not None else ""
        head = f" {star} {m.when}  clip {m.clip_id}  ({m.role}{score})"
        click.echo(head)
        excerpt = " ".join(m.caption.split())
        if len(excerpt) > EXCERPT:
            excerpt = excerpt[:EXCERPT].rstrip() + "…"
        click.echo(textwrap.indent(textwrap.fill(excerpt, width - 6), "     "))


# ---- stats, models, doctor ---------------------------------------------------------------

@main.command()
@_memory_options
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@click.pass_obj
def stats(state: _State, as_json: bool) -> None:
    """What the memory holds: clips, hours, days, model calls so far."""
    with _open_memory(state, create=False) as memory:
        s = memory.stats()
        calls = memory.db.execute(
            "SELECT command, role, count(*), sum(tokens_in), sum(tokens_out), sum(seconds) "
            "FROM calls GROUP BY command, role ORDER BY command, role").fetchall()
    s["calls"] = [dict(zip(("command", "role", "calls", "tokens_in", "tokens_out", "seconds"),
                           row)) for row in calls]
    if as_json:
        click.echo(json.dumps(s, indent=2))
        return
    click.echo(f"memory   {state.memory_path}")
    click.echo(f"sources  {s['sources']}\nclips    {s['clips']}\nkeys     {s['keys']}")
    click.echo(f"hours    {s['hours']:.2f}\ndays     {', '.join(s['days']) or '-'}")
    pyr = s["pyramid"]
    click.echo(f"facts    {pyr['facts']}" + (f" ({pyr['facts_extractive']} extractive)"
                                             if pyr["facts_extractive"] else ""))
    click.echo(f"clip nodes   {pyr['clip_nodes']}")
    for day, g in pyr["global_nodes"].items():
        click.echo(f"global node  {day:10} version {g['versions']}, {g['clips']} clips")
    for kind, n in pyr["links"].items():
        click.echo(f"links    {kind:28} {n}")
    if s["partial_sources"]:
        click.echo(f"partial  {len(s['partial_sources'])} source(s) not finished (run the same "
                   "ingest again to resume): " + ", ".join(s["partial_sources"]))
    for c in s["calls"]:
        click.echo(f"calls    {c['command']:16} {c['role']:12} {c['calls']:6} calls "
                   f"{c['tokens_in'] or 0:8} in {c['tokens_out'] or 0:7} out "
                   f"{c['seconds'] or 0:8.1f} s")


@main.group()
def models() -> None:
    """Model roles, profiles and weights."""


@models.command("list")
@_memory_options
@click.option("--no-load", is_flag=True, help="Only resolve weights; do not load the models.")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
@click.pass_obj
def models_list(state: _State, no_load: bool, as_json: bool) -> None:
    """Show each role of the profile: model, backend, where the weights are, whether it loads."""
    from edge.doctor import check_roles

    rows = check_roles(state.hub(), load=not no_load)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo(f"profile {state.profile_name}")
    for r in rows:
        status = "ok" if r["ok"] else "FAIL"
        if r["ok"] and not r["loaded"]:
            status = "found"
        click.echo(f"  {r['role']:12} {r['model']:30} {r['backend']:14} {status:5} "
                   f"{r['weights'] or '-'}")
        if r["error"]:
            click.echo(f"  {'':12} {r['error']}")


@main.command()
@_memory_options
@click.pass_obj
def doctor(state: _State) -> None:
    """Check every role of the profile, sqlite-vec, video decoding and the memory file."""
    from edge.doctor import run_checks

    ok = True
    for check in run_checks(state.hub(), state.memory_path):
        ok &= check.ok
        click.echo(f"{'ok  ' if check.ok else 'FAIL'}  {check.name:22} {check.detail}")
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":  # pragma: no cover
    main()
