"""``edge bench``: benchmarks with stable flags. ``edge bench qa`` measures round-1 retrieval
(and, with ``--answer``, the answer loop) on a question set in the EgoLifeQA format; the
work is :mod:`edge.bench`, this module only reads the flags and prints."""

from __future__ import annotations

from pathlib import Path

import click

from edge.cli import render
from edge.cli.options import State, json_option


@click.group(short_help="Measure retrieval and answering on question sets.")
def bench() -> None:
    """Measure retrieval and answering on benchmark question sets."""


def _profile(ctx: click.Context, _param, value):
    if value is not None:
        ctx.find_object(State).profile_name = value
    return value


_profile_option = click.option(
    "--profile", default=None, expose_value=False, callback=_profile,
    help="Model profile (small, tiny) [default: small or $EDGE_PROFILE].")
_PATH = click.Path(dir_okay=False, path_type=Path)


@bench.command(short_help="Hit rate, nDCG, ms (and accuracy) of `ask` on a question set.")
@click.option("--questions", required=True, metavar="FILE|easy|hard",
              help="Question file (EgoLifeQA records + target_clips), or a named set: easy "
                   "(day 1) or hard (days 1-4), which bring their caption file.")
@click.option("--captions", type=_PATH, default=None,
              help="Caption file the target_clips index (default: the named set's).")
@click.option("--memory", type=_PATH, default=None,
              help="Memory to search; missing clips of the caption file are ingested into it "
                   "[default: benchmarks/results/<set or captions>.db].")
@click.option("--split", type=click.Choice(["dev", "test", "all"]), default="all",
              show_default=True, help="Only the questions of this split.")
@click.option("--sample", type=click.IntRange(1), default=None,
              help="N questions spread evenly over the (split's) set.")
@click.option("--no-choices", is_flag=True,
              help="Skip the second retrieval mode (the options searched as extra queries).")
@click.option("--key-types", default=None, metavar="TYPES",
              help="Comma-separated vectors that vote in max-sim [default: ask's].")
@click.option("--retrieval", type=click.Choice(["keys", "hybrid"]), default=None,
              help="keys: max-sim only; hybrid: fused with BM25 [default: ask's, hybrid].")
@click.option("--fusion", type=click.Choice(["rrf", "wrrf", "max", "sum", "mean"]),
              default=None, help="How several queries' rankings are fused [default: rrf].")
@click.option("--rrf-k", type=click.IntRange(1, 1000), default=None,
              help="K of RRF [the embedder's].")
@click.option("--no-auto-window", is_flag=True,
              help="Do not read a time window from the question ('this morning').")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Any AskOptions field, e.g. --set delta=1 --set decompose=true "
                   "(repeatable; wins over the flags above).")
@click.option("--answer", is_flag=True,
              help="Also answer every question with the answer loop (slow on CPU).")
@click.option("--loss/--no-loss", default=True, show_default=True,
              help="With --answer, also answer each scorable question from its target clips "
                   "(raw and distilled: two more solver calls) for the loss table.")
@click.option("--open", "open_ended", is_flag=True,
              help="With --answer, ask without the options and judge the free answer "
                   "against the right option's text (LLM-as-judge: the solver).")
@click.option("--ablate", "ablations", multiple=True, metavar="NAME|FIELD=V1,V2",
              help="Run once per value of a lever and print one table: keys, delta, top_n, "
                   "rounds, filtering, loop, fusion, retrieval, memory=A.db,B.db (the "
                   "embedder), or any AskOptions field (repeatable; one lever at a time).")
@click.option("--workers", type=click.IntRange(1, 64), default=1, show_default=True,
              help="With --answer, questions answered at once (needs a remote solver: an "
                   "OpenAI-compatible server).")
@click.option("--resume", is_flag=True,
              help="With --answer, keep the answers already in --out from a run with the "
                   "same settings and answer only the rest.")
@_profile_option
@json_option("Print the whole result as JSON instead of tables.")
@click.option("--out", type=_PATH, default=None,
              help="Where the JSON result goes [default: "
                   "benchmarks/results/bench_qa_<set>_<split>.json].")
@click.pass_obj
def qa(state: State, questions: str, captions: Path | None, memory: Path | None, split: str,
       sample: int | None, no_choices: bool, key_types: str | None, retrieval: str | None,
       fusion: str | None, rrf_k: int | None, no_auto_window: bool, sets: tuple[str, ...],
       answer: bool, loss: bool, open_ended: bool, ablations: tuple[str, ...], workers: int,
       resume: bool, as_json: bool, out: Path | None) -> None:
    """Hit rate@Δ, all-targets, R@10, nDCG@10 and ms of `ask`'s round 1 on a question set,
    per type, tag and part (one-day / multi-day); --answer adds accuracy and cost, the
    rounds (MERIT Table 10) and the loss table: accuracy from the target clips, distilled,
    round 1, the loop. --ablate runs the set once per setting of a lever."""
    if not answer and (open_ended or resume or workers > 1):
        raise click.UsageError("--open, --resume and --workers go with --answer")
    from edge.bench import plan, run_qa
    from edge.bench.ablation import ablation_markdown, parse_ablation, run_ablation
    from edge.bench.levers import build_options, parse_sets
    from edge.bench.report import markdown

    opts = build_options(
        parse_sets(sets), retrieval=retrieval, fusion=fusion, rrf_k=rrf_k,
        key_types=tuple(dict.fromkeys(k.strip() for k in key_types.split(",") if k.strip()))
        if key_types is not None else None,
        auto_window=False if no_auto_window else None)
    p = plan(questions, captions, memory, out, split=split, sample=sample,
             modes=("question",) if no_choices else ("question", "choices"), opts=opts,
             answer=answer, loss=loss and not open_ended, profile=state.profile_name,
             open_ended=open_ended, workers=workers, resume=resume)
    say = lambda line: click.echo(line, err=True)  # noqa: E731
    if ablations:
        table = run_ablation(p, state.hub(), [parse_ablation(a) for a in ablations], say=say)
        if as_json:
            render.echo_json(table)
        else:
            click.echo(ablation_markdown(table))
        return
    result = run_qa(p, state.hub(), say=say)
    if as_json:
        render.echo_json(result)
        return
    click.echo(markdown(result))


@bench.command("videos", short_help="Hit rate (and accuracy) on Video-MME, LVBench, M3-Bench sets.")
@click.option("--questions", required=True, type=_PATH,
              help="Question file of a video benchmark: Video-MME, LVBench (JSONL), M3-Bench "
                   "or EgoLifeQA.")
@click.option("--format", "fmt", type=click.Choice(["videomme", "lvbench", "m3bench", "egolife"]),
              default=None, help="The file's format [default: told from its content].")
@click.option("--memories", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder of one memory per video, <video id>.db; a video without one is "
                   "skipped (said, with the command that builds it).")
@click.option("--merit-captions", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Folder of MERIT caption/key files, <video id>.json: a "
                                 "missing memory is built from its file first (keys included).")
@click.option("--duration", type=click.Choice(["short", "medium", "long"]), default=None,
              help="Only the questions of this Video-MME duration split.")
@click.option("--sample", type=click.IntRange(1), default=None,
              help="N questions spread evenly over the (split's) set.")
@click.option("--answer", is_flag=True,
              help="Also answer every question with the answer loop (slow on CPU); "
                   "open-ended answers are judged by the solver (LLM-as-judge).")
@click.option("--no-judge", is_flag=True,
              help="With --answer, keep open-ended answers unjudged (no judge call).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Any AskOptions field, e.g. --set top_n=10 (repeatable). Video questions "
                   "read no time of day from their words unless --set auto_window=true.")
@_profile_option
@json_option("Print the whole result as JSON instead of tables.")
@click.option("--out", type=_PATH, default=None,
              help="Where the JSON result goes, rewritten after every question [default: "
                   "benchmarks/results/bench_videos_<file stem>.json].")
@click.pass_obj
def videos(state: State, questions: Path, fmt: str | None, memories: Path,
           merit_captions: Path | None, duration: str | None, sample: int | None,
           answer: bool, no_judge: bool, sets: tuple[str, ...], as_json: bool,
           out: Path | None) -> None:
    """Round-1 hit rate@Δ (and, with --answer, accuracy and cost) of a Video-MME, LVBench,
    M3-Bench or EgoLifeQA question set over one memory per video, per question type and
    duration split."""
    from edge.bench.levers import build_options, parse_sets
    from edge.bench.loaders import load_items, select_items
    from edge.bench.run import results_dir
    from edge.bench.videos import markdown_videos, run_videos
    from edge.errors import BenchError

    items = select_items(load_items(questions, fmt), duration, sample)
    if not items:
        raise BenchError(f"no question of duration {duration!r} in {questions}")
    video_clock = any(i.clock == "video" for i in items)
    opts = build_options(parse_sets(sets), auto_window=False if video_clock else None)
    out = out or results_dir() / f"bench_videos_{questions.stem}.json"
    info = {"questions_file": str(questions), "format": items[0].benchmark,
            "duration": duration, "sample": sample, "profile": state.profile_name}
    hub = state.hub()
    judge = None
    if answer and not no_judge and any(i.open_ended for i in items):
        from edge.bench.judge import judge_answer

        def judge(item, text):  # the solver judges a free answer against the reference
            return judge_answer(hub.llm("solver"), item.question, item.answer, text).correct

    result = run_videos(items, memories, hub, opts, out, answer=answer, judge=judge,
                        captions=merit_captions, info=info,
                        say=lambda line: click.echo(line, err=True))
    if as_json:
        render.echo_json(result)
        return
    click.echo(markdown_videos(result))


@bench.command("speed", short_help="Ingest RTF, `edge ask` latency, KNN latency, peak RSS.")
@click.option("--only", "parts", default="ingest,answer,knn,rss", show_default=True,
              metavar="PARTS", help="What to measure: ingest (RTF per stage and tier), answer "
                                    "(`edge ask` p50/p95), knn (latency vs memory size), rss "
                                    "(peak RSS of ingest, ingest-captions, search, ask).")
@click.option("--profile", "profiles", default=None, metavar="P[,P]",
              help="Profile(s), comma-separated, e.g. tiny,small [default: small or "
                   "$EDGE_PROFILE].")
@click.option("--footage", multiple=True, type=click.Path(exists=True, path_type=Path),
              help="Video or audio file or folder to ingest (repeatable) [default: the shared "
                   "footage folder]; the first file is also `edge ingest`'s RSS run.")
@click.option("--llm-tier/--realtime-only", default=True, show_default=True,
              help="Also build and time the LLM tier (keys, pyramid) of the ingested footage.")
@click.option("--pyramid/--no-pyramid", default=True, show_default=True,
              help="The LLM tier includes the PyraVid pyramid (--no-pyramid: keys only).")
@click.option("--sizes", default="10k,100k", show_default=True, metavar="SIZES",
              help="KNN memory sizes in key vectors: 1k, 10k, 100k, 1M, 3M or a count.")
@click.option("--queries", type=click.IntRange(1), default=20, show_default=True,
              help="KNN queries per size and path.")
@click.option("--dim", type=click.IntRange(8, 4096), default=384, show_default=True,
              help="KNN vector width (384: MiniLM; 768 or a cut such as 512: EmbeddingGemma).")
@click.option("--memory", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="Memory `edge ask`/`search` run on [default: the caption "
                                 "file's first --clips records, built once per profile].")
@click.option("--captions", type=_PATH, default=None,
              help="Caption file of the answer memory [default: the shared EgoLife day 1].")
@click.option("--clips", type=click.IntRange(1), default=120, show_default=True,
              help="Records of --captions in the answer memory (120 = an hour of clips).")
@click.option("--questions", type=_PATH, default=None,
              help="EgoLifeQA question file asked [default: the easy set's].")
@click.option("--asks", type=click.IntRange(1), default=3, show_default=True,
              help="Questions asked per profile (spread over those whose evidence is in "
                   "the memory).")
@click.option("--timeout", type=click.FloatRange(1), default=1800.0, show_default=True,
              help="Seconds one measured command may run.")
@json_option("Print the whole result as JSON instead of Markdown.")
@click.option("--out", type=_PATH, default=None,
              help="Where the JSON goes, the Markdown beside it (.md) [default: "
                   "benchmarks/results/bench_speed.json].")
@click.pass_obj
def speed(state: State, parts: str, profiles: str | None, footage: tuple[Path, ...],
          llm_tier: bool, pyramid: bool, sizes: str, queries: int, dim: int,
          memory: Path | None, captions: Path | None, clips: int, questions: Path | None,
          asks: int, timeout: float, as_json: bool, out: Path | None) -> None:
    """Ingest real-time factor per stage and tier, `edge ask` latency per profile, KNN
    latency versus memory size and peak RSS per command; JSON + Markdown."""
    from edge.bench.speed import parse_parts, parse_sizes, run_speed, speed_plan
    from edge.bench.speed_report import speed_markdown

    names = tuple(dict.fromkeys(p.strip() for p in (profiles or state.profile_name).split(",")
                                if p.strip()))
    p = speed_plan(footage=footage, captions=captions, questions=questions, out=out,
                   memory=memory, parts=parse_parts(parts), profiles=names,
                   llm_tier=llm_tier, pyramid=pyramid, sizes=parse_sizes(sizes),
                   queries=queries, dim=dim, clips=clips, n_questions=asks, timeout=timeout)
    result = run_speed(p, say=lambda line: click.echo(line, err=True))
    if as_json:
        render.echo_json(result)
        return
    click.echo(speed_markdown(result))


@bench.command("report", short_help="One Markdown report with plots from the bench results.")
@click.option("--qa", "qa_files", multiple=True, type=_PATH,
              help="`edge bench qa` result JSON (repeatable) [default: every "
                   "benchmarks/results/bench_qa_*.json].")
@click.option("--speed", "speed_file", type=_PATH, default=None,
              help="`edge bench speed` result JSON [default: benchmarks/results/"
                   "bench_speed.json].")
@click.option("--knn", "knn_files", multiple=True, type=_PATH,
              help="benchmarks/knn_scale.py result JSON (repeatable) [default: every "
                   "benchmarks/results/knn_scale_*.json].")
@click.option("--out", type=_PATH, default=None,
              help="The Markdown file; its PNG plots go beside it [default: "
                   "benchmarks/results/bench_report.md].")
def report(qa_files: tuple[Path, ...], speed_file: Path | None,
           knn_files: tuple[Path, ...], out: Path | None) -> None:
    """One Markdown report with PNG plots (hit rate vs Δ, accuracy vs rounds, latency vs
    memory size, cost per hour of footage) from the bench results, beside the papers'
    numbers, with the configuration, machine and versions behind them."""
    from edge.bench.run import results_dir
    from edge.bench.summary import build_report, load_inputs

    inputs = load_inputs(list(qa_files) or None, speed_file, list(knn_files) or None)
    done = build_report(inputs, out or results_dir() / "bench_report.md")
    click.echo(f"wrote {done['markdown']}")
    for name, path in done["plots"].items():
        click.echo(f"  {name}: {path}")
    for line in done["missing"]:
        click.echo(f"missing: {line}", err=True)
