"""The papers' ablations as flags (``edge bench qa --ablate``): the same questions run once
per setting of one lever, everything else as given, and one table of the results.

Named ablations follow MERIT's tables: ``keys`` (Table 4: each key alone, the four keys,
the four keys with the caption vector), ``delta`` (Table 12: Δ 0–4), ``top_n`` (Table 7:
top-N 1, 3, 5, 10), ``rounds`` (Fig. 4b: R 1–5), ``filtering`` (Table 3 / 11: neighbor
filtering off/on), ``loop`` (the adaptive loop against MERIT's), ``fusion`` (MARQUIS §4.2:
RRF, weighted RRF, max, sum, mean), ``retrieval`` (max-sim over keys only against hybrid
with BM25). ``embedder`` compares memories, one per embedder: ``--ablate
memory=a.db,b.db``. Any :class:`~edge.answer.options.AskOptions` field takes a
comma-separated list of values the way ``--set`` reads one (``--ablate distill_tokens=600,800``).
Retrieval levers are cheap (round 1 only); answer levers (``rounds``, ``filtering``,
``loop``, Δ's effect on accuracy) need ``--answer``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from edge.errors import BenchError
from edge.store.records import KEY_TYPES

from .levers import parse_sets
from .run import Plan, run_qa, write_result

NAMED: dict[str, tuple[str, list[str]]] = {
    "keys": ("key_types", [*KEY_TYPES, ",".join(KEY_TYPES), ",".join((*KEY_TYPES, "caption"))]),
    "delta": ("delta", ["0", "1", "2", "3", "4"]),
    "top_n": ("top_n", ["1", "3", "5", "10"]),
    "rounds": ("max_rounds", ["1", "2", "3", "4", "5"]),
    "filtering": ("neighbor_filter", ["false", "true"]),
    "loop": ("loop", ["adaptive", "merit"]),
    "fusion": ("fusion", ["rrf", "wrrf", "max", "sum", "mean"]),
    "retrieval": ("retrieval", ["keys", "hybrid"]),
}
"""``--ablate NAME``: the AskOptions field it varies and its values (MERIT Tables 3, 4, 7,
11, 12, Fig. 4b; MARQUIS §4.2)."""


def parse_ablation(text: str) -> tuple[str, list[str]]:
    """``NAME`` (one of :data:`NAMED`) or ``FIELD=V1,V2,...`` (``memory=A.db,B.db`` or any
    AskOptions field; ``key_types`` values are separated by ``;`` since a value is itself a
    comma list) → (field, values as text). Raises :class:`BenchError` for an unknown name
    or field, or fewer than two values."""
    if "=" not in text:
        if text not in NAMED:
            raise BenchError(f"--ablate {text!r}: not a named ablation "
                             f"({', '.join(NAMED)}) nor FIELD=V1,V2")
        return NAMED[text]
    field, _, values = text.partition("=")
    field = field.strip().replace("-", "_")
    sep = ";" if field == "key_types" else ","
    vals = [v.strip() for v in values.split(sep) if v.strip()]
    if len(vals) < 2:
        raise BenchError(f"--ablate {text!r}: give two or more values to compare")
    if field != "memory":
        try:  # an unknown field or a value of the wrong type, in --ablate's words
            for v in vals:
                parse_sets([f"{field}={v}"])
        except BenchError as e:
            raise BenchError(str(e).replace("--set", "--ablate", 1)) from None
    return field, vals


def setting_plan(p: Plan, field: str, value: str) -> Plan:
    """``p`` with ``field`` set to ``value`` (``memory``: another memory file) and its own
    ``out`` beside ``p.out`` (``<stem>.<field>=<value>.json``), so each setting resumes on
    its own."""
    tag = f"{field}={value}".replace("/", "_").replace(",", "+")
    out = p.out.with_name(f"{p.out.stem}.{tag}.json")
    if field == "memory":
        return replace(p, memory=Path(value), out=out)
    return replace(p, opts=replace(p.opts, **parse_sets([f"{field}={value}"])), out=out)


def _row(field: str, value: str, result: dict) -> dict:
    """One line of the ablation table: the setting and its headline numbers."""
    row: dict = {"field": field, "value": value, "out": result["out"]}
    for mode, s in result["retrieval"].items():
        t = s["total"]
        row[mode] = {k: t.get(k) for k in ("scored", "hit@Δ0", "hit@Δ1", "hit@Δ2", "all@Δ2",
                                           "nDCG@10", "ms_median")}
    if result.get("answering"):
        t = result["answering"]["total"]
        row["answering"] = {k: t.get(k) for k in ("n", "accuracy", "hit@Δ2", "rounds_mean",
                                                  "calls_mean", "tokens_in_mean",
                                                  "seconds_p50", "seconds_p95")}
    return row


def run_ablation(p: Plan, hub, ablations: list[tuple[str, list[str]]],
                 say: Callable[[str], None] = lambda _line: None) -> dict:
    """Run ``p`` once per value of each ablation (one lever at a time), each setting's
    result written to its own file (:func:`setting_plan`), and the table of them all to
    ``<p.out stem>.ablation.json``. A setting whose memory is missing is reported and
    skipped; the run goes on. Returns ``{"plan": …, "rows": [...], "skipped": [...]}``."""
    rows, skipped = [], []
    for field, values in ablations:
        for value in values:
            sp = setting_plan(p, field, value)
            if field == "memory" and not sp.memory.is_file():
                skipped.append({"field": field, "value": value, "why": "no memory there"})
                say(f"skipped {field}={value}: no memory at {sp.memory}")
                continue
            say(f"ablation {field}={value}")
            rows.append(_row(field, value, run_qa(sp, hub, say=say)))
    table = {"set": p.name, "split": p.split, "sample": p.sample, "answer": p.answer,
             "profile": p.profile, "rows": rows, "skipped": skipped,
             "out": str(p.out.with_name(f"{p.out.stem}.ablation.json"))}
    write_result(table, Path(table["out"]))
    return table


def ablation_markdown(table: dict) -> str:
    """The ablation table as Markdown: a row per setting — hit Δ0/Δ1/Δ2, all Δ2 and
    nDCG@10 of the question alone (and with options when measured), ms p50, and with
    ``--answer`` accuracy, rounds, LLM calls and seconds p50/p95."""
    answer = table["answer"]
    head = ["setting", "hit Δ0", "hit Δ1", "hit Δ2", "all Δ2", "nDCG@10", "ms p50",
            "hit Δ2 (options)"]
    if answer:
        head += ["accuracy", "rounds", "LLM calls", "s p50", "s p95"]
    lines = [f"Ablations on {table['set']} ({table['split']}), one lever at a time:", "",
             f"| {' | '.join(head)} |", "|---" * len(head) + "|"]
    for r in table["rows"]:
        q, c, a = r.get("question", {}), r.get("choices", {}), r.get("answering") or {}
        cells = [f"{r['field']}={r['value']}", *(q.get(k) for k in (
            "hit@Δ0", "hit@Δ1", "hit@Δ2", "all@Δ2", "nDCG@10", "ms_median")), c.get("hit@Δ2")]
        if answer:
            cells += [a.get(k) for k in ("accuracy", "rounds_mean", "calls_mean",
                                         "seconds_p50", "seconds_p95")]
        lines.append("| " + " | ".join("–" if v is None else str(v) for v in cells) + " |")
    for s in table["skipped"]:
        lines.append(f"skipped {s['field']}={s['value']}: {s['why']}")
    lines += ["", f"written {table['out']}"]
    return "\n".join(lines)
