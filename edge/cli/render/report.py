"""What ``edge report`` prints: a day's cited digest as lines or as Markdown."""

from __future__ import annotations

import textwrap

from edge.cli.render import WIDTH


def _report_sources(rep) -> list[str]:
    """The cited clips with the evidence from each, best support first."""
    cited = rep.cited_clips
    lines = []
    for cid in cited:
        recs = sorted((r for r in rep.evidence if r.clip_id == cid),
                      key=lambda r: -(r.support or 0.0))
        if not recs:
            continue
        lines.append(f"[{recs[0].when}] clip {cid}: " + "; ".join(
            r.text + (f" ({r.support:.2f})" if r.support is not None else "")
            for r in recs[:2]))
    return lines


def report_lines(rep) -> list[str]:
    """``edge report`` on a terminal: the title, the report wrapped to :data:`WIDTH`, its
    sources (cited clips with their evidence and support) and the checks line."""
    title = f"{rep.scope}" + (f": {rep.topic}" if rep.topic else "") + f" ({rep.style})"
    out = [title, ""]
    if not rep.sentences:
        out.append(f"Nothing to report: no evidence reached support {rep.threshold:.2f} "
                   "(lower --threshold, or widen the scope).")
    elif rep.style == "bullet":
        out += [textwrap.fill(line, WIDTH, subsequent_indent="   ")
                for line in rep.text.splitlines()]
    else:
        out.append(textwrap.fill(rep.text, WIDTH))
    sources = _report_sources(rep)
    if sources:
        out += ["", "Sources:"] + [textwrap.fill(s, WIDTH, initial_indent="  ",
                                                 subsequent_indent="    ") for s in sources]
    return out + ["", rep.checks_line()]


def report_markdown(rep) -> str:
    """``edge report --md``: the report, its sources and the checks as Markdown."""
    title = f"# {rep.scope}" + (f": {rep.topic}" if rep.topic else "")
    body = rep.text if rep.sentences else "_Nothing reached the support threshold._"
    sources = "\n".join(f"- {s}" for s in _report_sources(rep))
    return (f"{title}\n\n{body}\n\n## Sources\n\n{sources or '_none_'}\n\n"
            f"## Checks\n\n{rep.checks_line()}\n")
