"""The ``edge`` command line (click): one group, a command per job, ``--json`` for scripts."""

from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path

import click

from edge import config
from edge.errors import USER_ERRORS

EXCERPT = 160


class _State:
    def __init__(self, memory: Path, profile: str) -> None:
        self.memory_path = memory
        self.profile_name = profile
        self._hub = None

    def hub(self):
        if self._hub is None:
            from models import ModelHub
            from models.registry import load_manifest_with_user

            manifest = load_manifest_with_user(config.user_profiles_file())
            self._hub = ModelHub(manifest.profile(self.profile_name), config.models_dir())
        return self._hub

    def close(self) -> None:
        if self._hub is not None:
            self._hub.close()


class _Group(click.Group):
    """Turns the project's expected errors into one clear line and exit code 1."""

    def invoke(self, ctx: click.Context):
        import apsw

        try:
            return super().invoke(ctx)
        except USER_ERRORS as e:
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
@click.option("--audio", "audio", default=None, metavar="FILE",
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A separate audio recording of the (one) video given: its transcript is "
                   "used instead of the video's own sound.")
@click.option("--audio-offset", type=float, default=0.0, show_default=True, metavar="SECONDS",
              help="With --audio: how many seconds after the video's start the audio begins.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON report.")
@_pyramid_options
@click.pass_obj
def ingest(state: _State, paths: tuple[Path, ...], start: str | None, audio: Path | None,
           audio_offset: float, as_json: bool, pyramid: bool, links: bool,
           max_candidates: int, global_every: int) -> None:
    """Turn videos (files or folders) into episodic memory: 30 s clips, captions, keys."""
    from edge.ingest import IngestOptions, ingest_paths
    from edge.timeline import parse_moment

    options = IngestOptions(start=parse_moment(start) if start else None, audio=audio,
                            audio_offset=audio_offset)
    for p in paths:
        if not p.exists():
            raise click.ClickException(f"{p}: no such file or folder")
    if audio is not None and (len(paths) != 1 or paths[0].is_dir()):
        raise click.ClickException("--audio belongs to one video: give exactly one video file "
                                   "with it (not a folder or several files)")
    if audio_offset and audio is None:
        raise click.ClickException("--audio-offset only applies together with --audio FILE")
    from edge.ingest import MEDIA_SUFFIXES, find_media

    if not find_media(paths):  # only folders were given, and they hold no media file
        raise click.ClickException(
            f"no video or audio files in {', '.join(str(p) for p in paths)} (looked for "
            f"{' '.join(sorted(MEDIA_SUFFIXES))}, in subfolders too); check the folder")
    bar = None
    report = None

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
            memory.record_calls("ingest", hub.usage.records,
                                run_id=report.run_id if report is not None else None)
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
    if report.media_seconds > 0:
        click.echo("stage        seconds    RTF  calls  tokens in/out")
        for name, st in report.stages.items():
            click.echo(f"  {name:10} {st['seconds']:8.1f} {st['rtf']:6.3f} {st['calls']:6} "
                       f"{st['tokens_in']:>7}/{st['tokens_out']}")
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
        except KeyboardInterrupt:
            click.echo("\nInterrupted. Every clip stored so far is kept; run the same command "
                       "again to resume where it stopped.", err=True)
            raise SystemExit(130) from None
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
@click.option("--from", "from_", default=None, metavar="TIME",
              help="Search only clips that end after this moment (same forms as --at).")
@click.option("--to", "to", default=None, metavar="TIME",
              help="Search only clips that end by this moment.")
@click.option("--window/--no-window", "auto_window", default=True, show_default=True,
              help="Read a time window the question names ('yesterday evening', "
                   "'last night', 'DAY1 afternoon') and search inside it.")
@click.option("--top-n", type=click.IntRange(1, 50), default=None,
              help="Anchor clips per round [default: 10 for a solver with a ≥16k context, "
                   "else 5].")
@click.option("--delta", type=click.IntRange(0, 4), default=2, show_default=True,
              help="Neighbor window Δ (clips on each side).")
@click.option("--rounds", type=click.IntRange(1, 5), default=5, show_default=True,
              help="Most retrieval rounds R.")
@click.option("--retrieval", type=click.Choice(["hybrid", "keys"]), default="hybrid",
              show_default=True,
              help="hybrid: MERIT max-sim over the keys (--keys) fused (RRF, k=60) with BM25 over "
                   "captions, transcripts and keys; keys: max-sim only.")
@click.option("--keys", "key_types", default="event,dialogue,object,summary,caption",
              show_default=True, metavar="TYPES",
              help="Comma-separated vectors that vote in max-sim (MERIT keys and the caption).")
@click.option("--loop", type=click.Choice(["merit", "single"]), default="merit",
              show_default=True,
              help="merit: per round a neighbor-filtering call and a sufficiency call, then "
                   "one answer call; single: one call per round answers and decides "
                   "(cheapest).")
@click.option("--filter/--no-filter", "neighbor_filter", default=False, show_default=True,
              help="--loop single only: add MERIT neighbor filtering (one more call a round).")
@click.option("--decompose", is_flag=True,
              help="MARQUIS: split the question into sub-queries (one more LLM call) and fuse "
                   "their rankings.")
@click.option("--fusion", type=click.Choice(["rrf", "wrrf", "max", "sum", "mean"]),
              default="rrf", show_default=True, help="How sub-query rankings are fused.")
@click.option("--rrf-k", type=click.IntRange(1, 1000), default=60, show_default=True,
              help="K of reciprocal rank fusion (10, 60, 100 are usual).")
@click.option("--pyramid/--no-pyramid", "use_pyramid", default=None,
              help="PyraVid expansion + pruning each round (one more LLM call) and the day's "
                   "global node as context [default: when the memory has a pyramid].")
@click.option("--frames/--no-frames", default=None,
              help="Send anchor keyframes to a VLM solver with the final answer [default: "
                   "only when the solver takes images and its backend allows frames].")
@click.option("--choices", default=None, metavar="A|B|C|D",
              help="Multiple choice: options separated by '|'; the answer is one letter.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the answer, moments, rounds and usage as JSON.")
@click.pass_obj
def ask(state: _State, question: str, at: str | None, from_: str | None, to: str | None,
        auto_window: bool, top_n: int | None, delta: int, rounds: int, retrieval: str,
        key_types: str, loop: str, neighbor_filter: bool, decompose: bool, fusion: str, rrf_k: int,
        use_pyramid: bool | None, frames: bool | None, choices: str | None,
        as_json: bool) -> None:
    """Answer a question from memory and cite the moments it relied on."""
    from edge.answer import ask as run_ask
    from edge.store import INDEX_TYPES
    from edge.timeline import TimeWindow, parse_moment

    keys = tuple(dict.fromkeys(k.strip() for k in key_types.split(",") if k.strip()))
    if not keys or set(keys) - set(INDEX_TYPES):
        raise click.BadParameter(f"choose from {', '.join(INDEX_TYPES)}", param_hint="--keys")
    at_t = parse_moment(at) if at else None
    window = None
    if from_ or to:
        start, end = (parse_moment(from_) if from_ else None), (parse_moment(to) if to else None)
        if start is not None and end is not None and start >= end:
            raise click.BadParameter("--from must be before --to", param_hint="--from")
        window = TimeWindow(start, end, f"{from_ or '…'} to {to or '…'}")
    with _open_memory(state, create=False) as memory:
        hub = state.hub()
        try:
            result = run_ask(
                memory, hub, question, at=at_t, window=window, auto_window=auto_window,
                top_n=top_n, delta=delta, max_rounds=rounds, retrieval=retrieval,
                key_types=keys, loop=loop,
                neighbor_filter=neighbor_filter, decompose=decompose, fusion=fusion,
                rrf_k=rrf_k, pyramid=use_pyramid, frames=frames,
                choices=[c.strip() for c in choices.split("|")] if choices else None,
                on_progress=None if as_json else _ask_progress)
        finally:
            memory.record_calls("ask", hub.usage.records)
    if as_json:
        click.echo(json.dumps(result.as_dict(), indent=2, ensure_ascii=False))
        return
    if result.scope.get("label"):
        click.echo(f"Searched {result.scope['label']}.")
    if result.sub_queries:
        click.echo("Sub-queries: " + "; ".join(result.sub_queries))
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
        if m.evidence:
            click.echo(textwrap.indent(textwrap.fill(f"kept: {m.evidence}", width - 6),
                                       "     "))


def _ask_progress(line: str) -> None:
    if sys.stderr.isatty():
        click.echo(f"… {line}", err=True)


# ---- stats, models, doctor ---------------------------------------------------------------

@main.command()
@_memory_options
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@click.pass_obj
def stats(state: _State, as_json: bool) -> None:
    """What the memory holds: clips, hours, days, model calls so far."""
    with _open_memory(state, create=False) as memory:
        s = memory.stats()
        s["calls"] = memory.call_totals()
        s["ingest_cost"] = memory.stage_costs("ingest")
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
    cost = s["ingest_cost"]
    if cost["stages"]:
        click.echo(f"ingest   {cost['runs']} run(s), {cost['clips_added']} clips, "
                   f"{cost['hours']:.3f} h of footage processed")
        for name, st in cost["stages"].items():
            rtf = f"{st['rtf']:.3f}" if st["rtf"] is not None else "-"
            click.echo(f"stage    {name:12} {st['seconds']:8.1f} s  RTF {rtf:>6}  "
                       f"{st['calls']:6} calls {st['tokens_in']:8} in {st['tokens_out']:7} out")


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
    _echo_recommended(state)


def _manifest():
    from models.registry import load_manifest_with_user

    return load_manifest_with_user(config.user_profiles_file())


def _echo_recommended(state: _State) -> None:
    from models.pull import recommended

    rows = recommended(_manifest(), config.models_dir())
    if not rows:
        return
    click.echo(f"recommended models (edge models pull NAME; into {config.models_dir()})")
    for r in rows:
        click.echo(f"  {r['name']:30} {r['role']:18} {r['download_mb'] or '?':>5} MB "
                   f"{r['ram_gb'] or '?':>4} GB RAM  {'present' if r['present'] else '-':8}"
                   f" {r['license']}")


@models.command("recommended")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
@click.pass_obj
def models_recommended(state: _State, as_json: bool) -> None:
    """Models to pull from a model hub: role, size, RAM needed, license, whether present."""
    from models.pull import recommended

    rows = recommended(_manifest(), config.models_dir())
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    _echo_recommended(state)


@models.command("pull")
@click.argument("name")
@click.pass_obj
def models_pull(state: _State, name: str) -> None:
    """Download model NAME (GGUF + mmproj) from the model hub into the models directory,
    with progress, resume and checksum verification. Needs a network connection."""
    from models.pull import PullError, pull

    spec = _manifest().model(name)
    try:
        files = pull(spec, config.models_dir())
    except PullError as e:
        raise click.ClickException(str(e)) from None
    for f in files:
        how = "downloaded" if f.downloaded else "already present"
        check = ("sha256 verified" if f.verified else
                 f"sha256 {f.sha256} (unverified: the manifest records no checksum)")
        click.echo(f"{how:15} {f.path}  {check}")
    click.echo(f"{name} is ready; use it in a profile (see `edge models recommended`).")


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


# ---- record, status ----------------------------------------------------------------------

def _size_option(value: str | None, name: str) -> int | None:
    from humanfriendly import InvalidSize, parse_size

    if value is None or value.lower() in ("none", "off", "0"):
        return None
    try:
        return int(parse_size(value))
    except InvalidSize:
        raise click.BadParameter(f"{value!r} is not a size; write e.g. 500MB, 2GB or 1.5GiB",
                                 param_hint=name) from None


def _duration_option(value: str | None, name: str) -> float | None:
    from humanfriendly import InvalidTimespan, parse_timespan

    if value is None or value.lower() in ("none", "off", "forever"):
        return None
    try:
        return float(parse_timespan(value))
    except InvalidTimespan:
        raise click.BadParameter(f"{value!r} is not a duration; write e.g. 90m, 12h or 7d",
                                 param_hint=name) from None


def _record_logging(spool: Path) -> None:
    import logging
    from logging.handlers import RotatingFileHandler

    log = logging.getLogger("edge.record")
    log.setLevel(logging.INFO)
    log.propagate = False
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%Y-%m-%d %H:%M:%S")
    for h in list(log.handlers):
        log.removeHandler(h)
    err = logging.StreamHandler(sys.stderr)
    err.setFormatter(fmt)
    log.addHandler(err)
    spool.mkdir(parents=True, exist_ok=True)
    fh = RotatingFileHandler(spool / "record.log", maxBytes=5_000_000, backupCount=3)
    fh.setFormatter(fmt)
    log.addHandler(fh)


@main.command()
@_memory_options
@click.option("--camera", default=None, metavar="INDEX",
              help="Record a webcam: its index (0 = /dev/video0) or device name.")
@click.option("--url", default=None, metavar="URL|FILE",
              help="Record a network stream (rtsp://…, http://…) or replay a file.")
@click.option("--watch", type=click.Path(file_okay=False, path_type=Path), default=None,
              metavar="DIR", help="Record the files a camera writes into DIR.")
@click.option("--realtime", is_flag=True,
              help="With --url FILE: replay the file at real speed, as a live source.")
@click.option("--speed", type=click.FloatRange(min=0.1, max=100), default=1.0,
              show_default=True, help="With --realtime: replay this many times faster "
                                      "(for tests and demos).")
@click.option("--raw-budget", default=None, metavar="SIZE",
              help="Disk budget for raw clips, e.g. 2GB; the oldest clips already in memory "
                   "are deleted above it. Default: no budget.")
@click.option("--keep-raw", default=None, metavar="DURATION",
              help="Delete raw clips older than this once in memory, e.g. 7d or 12h. "
                   "Default: keep.")
@click.option("--min-free", default="1GB", show_default=True, metavar="SIZE",
              help="Refuse to start, and stop writing clips, below this much free disk.")
@click.option("--max-pending", type=click.IntRange(min=1), default=120, show_default=True,
              help="Bound of the ingestion queue (finished clips not yet in memory).")
@click.option("--clip-seconds", type=click.FloatRange(min=2), default=30.0, show_default=True,
              help="Length of a clip file (cut at the next keyframe when stream copying).")
@click.option("--reencode", is_flag=True,
              help="Encode the video (H.264) instead of stream copying it.")
@click.option("--settle", type=click.FloatRange(min=0), default=5.0, show_default=True,
              help="With --watch: seconds a file must stay unchanged before it is read.")
@click.pass_obj
def record(state: _State, camera: str | None, url: str | None, watch: Path | None,
           realtime: bool, speed: float, raw_budget: str | None, keep_raw: str | None,
           min_free: str, max_pending: int, clip_seconds: float, reencode: bool,
           settle: float) -> None:
    """Record a camera, stream, file or folder into memory, unattended, until stopped.

    \b
    Capture writes 30 s clip files into <memory>.spool/ first; an ingestion worker turns
    each finished clip into memory, so a slow model never drops footage. Restarting
    resumes the clips not yet in memory. SIGTERM/SIGINT close the current clip and stop
    after the clip being ingested. `edge status` shows how it is going.
    """
    from edge.capture import SourceSpec
    from edge.record import Recorder, RecordError, RecordOptions
    from edge.spool import spool_dir

    given = [x for x in (camera, url, watch) if x is not None]
    if len(given) != 1:
        raise click.UsageError("give exactly one source: --camera INDEX, --url URL|FILE or "
                               "--watch DIR")
    if camera is not None:
        spec = SourceSpec("camera", str(camera))
    elif watch is not None:
        if not watch.is_dir():
            raise click.BadParameter(f"{watch} is not a folder", param_hint="--watch")
        spec = SourceSpec("watch", str(watch))
    elif "://" in url:
        spec = SourceSpec("stream", url)
    else:
        if not Path(url).is_file():
            raise click.BadParameter(f"{url}: no such file (a stream needs a scheme such as "
                                     "rtsp:// or http://)", param_hint="--url")
        spec = SourceSpec("file", url, realtime=realtime, speed=speed)
    if realtime and spec.kind != "file":
        raise click.UsageError("--realtime applies to --url FILE only")
    options = RecordOptions(
        clip_seconds=clip_seconds, raw_budget=_size_option(raw_budget, "--raw-budget"),
        keep_raw=_duration_option(keep_raw, "--keep-raw"),
        min_free=_size_option(min_free, "--min-free") or 0, max_pending=max_pending,
        reencode=reencode, settle=settle)
    _record_logging(spool_dir(state.memory_path))
    recorder = Recorder(state.memory_path, spec, options, hub_factory=state.hub)
    try:
        code = recorder.run()
    except RecordError as e:
        raise click.ClickException(str(e)) from None
    except KeyboardInterrupt:
        recorder.state = "stopped"
        recorder.write_status()
        click.echo("Forced stop: finished clips are kept; the clip being ingested and the "
                   "rest of the queue are ingested on the next start.", err=True)
        raise SystemExit(130) from None
    raise SystemExit(code)


def _ago(t: float | None) -> str:
    if not t:
        return "-"
    from humanfriendly import format_timespan

    return f"{format_timespan(round(max(0.0, time.time() - t)), max_units=2)} ago"


@main.command()
@_memory_options
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.pass_obj
def status(state: _State, as_json: bool) -> None:
    """Is the recorder running? Its source, queue, lag, disk use and last error."""
    from humanfriendly import format_size, format_timespan

    from edge.record import recorder_status

    s = recorder_status(state.memory_path)
    stats = None
    if state.memory_path.exists():
        with _open_memory(state, create=False) as memory:
            stats = memory.stats()
    if as_json:
        click.echo(json.dumps({"recorder": s, "memory": str(state.memory_path),
                               "memory_stats": stats}, indent=2, ensure_ascii=False))
        return
    click.echo(f"memory     {state.memory_path}"
               + (f"  ({stats['clips']} clips, {stats['hours']:.2f} h, last ingest "
                  f"{_ago(stats['last_ingest'])})" if stats else "  (not created yet)"))
    if s is None:
        click.echo("recorder   has never run for this memory; start it with "
                   "`edge record --camera 0` (or --url URL, --watch DIR)")
        return
    shown_state = s["state"] if s["running"] or s["state"] in ("stopped", "failed") else (
        f"not running (last state {s['state']}; it stopped without a clean shutdown)")
    click.echo(f"recorder   {shown_state}, pid {s['pid']}, updated {_ago(s['updated_at'])}")
    click.echo(f"source     {s['source']}")
    click.echo(f"clips      {s['clips_recorded']} recorded this run, {s['clips_ingested']} in "
               f"memory" + (f", ingesting {s['ingesting']}" if s.get("ingesting") else ""))
    bp = "  BACK-PRESSURE" if s["backpressure"] else ""
    click.echo(f"queue      {s['queue']}/{s['queue_capacity']} clips waiting for ingestion{bp}")
    lag = s.get("lag_seconds")
    click.echo(f"lag        {format_timespan(lag) if lag is not None else '-'} behind "
               "the source")
    d = s["disk"]
    budget = format_size(d["raw_budget"]) if d["raw_budget"] else "no budget"
    keep = format_timespan(d["keep_raw"]) if d["keep_raw"] else "kept"
    free = format_size(d["free_bytes"]) if d["free_bytes"] is not None else "?"
    click.echo(f"disk       raw clips {format_size(d['raw_bytes'])} in {d['raw_clips']} files "
               f"({budget}, older ones {keep}); free {free} (floor "
               f"{format_size(d['min_free'])}); {d['deleted_clips']} deleted")
    if s.get("last_deletion"):
        click.echo(f"deleted    {s['last_deletion']}")
    click.echo(f"last error {s.get('last_error') or '-'}")


# ---- chat --------------------------------------------------------------------------------

@main.command()
@_memory_options
@click.option("--delta", type=click.IntRange(0, 4), default=2, show_default=True,
              help="Neighbor window Δ (clips on each side) for answers and a clip's neighbors.")
@click.option("--rounds", type=click.IntRange(1, 5), default=5, show_default=True,
              help="Most retrieval rounds R per question.")
@click.option("--loop", type=click.Choice(["merit", "single"]), default="merit",
              show_default=True, help="The answer loop, as in `edge ask --loop`.")
@click.option("--filter/--no-filter", "neighbor_filter", default=False, show_default=True,
              help="--loop single only: add MERIT neighbor filtering (one more call a round).")
@click.pass_obj
def chat(state: _State, delta: int, rounds: int, loop: str, neighbor_filter: bool) -> None:
    """Chat about your day in the terminal: ask, see cited moments, browse the timeline.

    Keys: Enter asks, Esc cancels, ctrl+t timeline, F1 help, ctrl+q quits.
    """
    from tui.app import EdgeApp  # Textual loads only for this command

    EdgeApp(state.memory_path, state.hub(), delta=delta,
            ask_options={"max_rounds": rounds, "loop": loop,
                         "neighbor_filter": neighbor_filter}).run()


if __name__ == "__main__":  # pragma: no cover
    main()
