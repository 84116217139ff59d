"""``edge report``: a cited report of a day or a span of time, optionally about a topic, in
one of MARQUIS' styles (bullet, single, ginger), with its evidence, support scores and
citation checks (:mod:`edge.report`)."""

from __future__ import annotations

import click

from edge.cli import render
from edge.cli.options import State, json_option, memory_options, open_memory, record_calls
from edge.cli.render.ask import AskStream
from edge.cli.render.report import report_lines, report_markdown


@click.command(short_help="Write a cited report of a day or a span of time.")
@memory_options
@click.option("--day", default=None, metavar="DAY",
              help="The day to report ('DAY1', '2025-02-20') [default: the memory's last day "
                   "unless --from/--to].")
@click.option("--from", "from_", default=None, metavar="TIME",
              help="Report the clips that end after this moment ('DAY1 11:00').")
@click.option("--to", "to", default=None, metavar="TIME",
              help="Report the clips that end by this moment.")
@click.option("--topic", default=None, metavar="TEXT",
              help="What the report is about ('the kitchen renovation'): its clips are found "
                   "as `edge search` finds them, and claims about it are extracted.")
@click.option("--style", type=click.Choice(["bullet", "single", "ginger"]), default="ginger",
              show_default=True,
              help="bullet: the evidence as a dated list; single: one prompt writes it; "
                   "ginger: facets, one cited sentence each, then a fluency pass.")
@click.option("--threshold", type=click.FloatRange(0.0, 1.0), default=0.5, show_default=True,
              help="Support (0–1) a piece of evidence needs to be written from.")
@click.option("--max-clips", type=click.IntRange(1, 60), default=12, show_default=True,
              help="Clips the report covers (each judged; more clips, more time).")
@click.option("--qa", type=click.IntRange(0, 5), default=0, show_default=True,
              help="With --topic: split it into N sub-questions and answer each with "
                   "`edge ask` (one round) as more evidence (MARQUIS QA evidence).")
@click.option("--check/--no-check", "check", default=True, show_default=True,
              help="Judge each piece of evidence's support (one solver call each: ~20 calls, "
                   "~90 s for a day on 2 cores) and check the citations. --no-check writes "
                   "from every piece, unjudged: a bullet report is then instant (no model "
                   "call).")
@click.option("--md", "as_md", is_flag=True, help="Print Markdown (report, sources, checks).")
@json_option("Print the report, its evidence with support scores, checks and usage as JSON.")
@click.pass_obj
def report(state: State, day: str | None, from_: str | None, to: str | None,
           topic: str | None, style: str, threshold: float, max_clips: int, qa: int,
           check: bool, as_md: bool, as_json: bool) -> None:
    """Write a cited report of a day (or --from/--to), every citation a moment you can open."""
    from edge.cli.options import parse_window
    from edge.report import ReportError, make_report
    from edge.report.evidence import day_span

    if day and (from_ or to):
        raise click.UsageError("give --day or --from/--to, not both")
    if topic is not None:
        from edge.errors import require_utf8

        require_utf8(topic, "--topic")
    if topic is not None and not topic.strip():
        raise click.UsageError("--topic is empty; leave it out for a report of everything")
    if qa and not topic:
        raise click.UsageError("--qa needs --topic: the sub-questions come from the topic")
    with open_memory(state, create=False, reading=True) as memory:
        if from_ or to:
            window = parse_window(from_, to)
            start, end, label = window.start, window.end, window.label
        else:
            days = memory.days()
            if not days:
                raise ReportError("this memory holds no clip yet; `edge ingest` some footage")
            label = {d.lower(): d for d in days}.get(day.lower(), day) if day else days[-1]
            span = day_span(memory, label)  # 'day1' is DAY1, as in the chat's /report
            if span is None:
                raise ReportError(f"no clip on {label}; the memory holds {', '.join(days)}")
            start, end = span
        hub = state.hub()
        stream = AskStream()
        try:
            rep = make_report(memory, hub, start=start, end=end, label=label, topic=topic,
                              style=style, threshold=threshold, max_clips=max_clips, qa=qa,
                              check=check,
                              on_progress=None if as_json or as_md else stream.progress)
        except KeyboardInterrupt:
            stream.close()
            click.echo("report cancelled: no report was written and every clip is kept; run "
                       "the command again to make it", err=True)
            raise SystemExit(130) from None
        finally:
            stream.close()
            record_calls(memory, "report", hub.usage.records)
    if as_json:
        render.echo_json(rep.as_dict())
    elif as_md:
        click.echo(report_markdown(rep))
    else:
        render.echo(report_lines(rep))

