"""The Markdown tables ``edge bench qa`` prints from its result (:func:`markdown`)."""

from __future__ import annotations

MODE_TITLES = {"question": "question alone", "choices": "question + options (choice queries)"}
_RET_COLS = ("n", "hit@Δ0", "hit@Δ1", "hit@Δ2", "all@Δ2", "R@10", "nDCG@10", "ms_median",
             "ms_mean")
_RET_HEAD = ("n", "hit Δ0", "hit Δ1", "hit Δ2", "all Δ2", "R@10", "nDCG@10", "ms p50",
             "ms mean")
_ANS_COLS = ("n", "accuracy", "hit@Δ2", "all@Δ2", "rounds_mean", "rounds_1", "calls_mean",
             "tokens_in_mean", "tokens_evaluated_mean", "tokens_out_mean", "seconds_p50",
             "seconds_p95")
_ANS_HEAD = ("n", "accuracy", "hit Δ2", "all Δ2", "rounds", "1 round", "LLM calls",
             "prompt tokens sent", "evaluated", "tokens out", "s p50", "s p95")


def _cell(v) -> str:
    return "–" if v is None else str(v)


def table(summary: dict, cols: tuple[str, ...], head: tuple[str, ...],
          count: str = "n") -> list[str]:
    """One Markdown table: the ``total`` row, then a row per type, tag and part. ``count``:
    the key whose value is the row's ``n`` (``scored`` for hit metrics)."""
    lines = [f"| group | {' | '.join(head)} |", "|---" * (len(head) + 1) + "|"]
    rows = [("**all**", summary["total"])]
    for by in ("type", "tag", "part"):
        rows += [(f"{by}: {name}", s) for name, s in summary.get(f"by_{by}", {}).items()]
    for label, s in rows:
        vals = [s.get(count if c == "n" else c) for c in cols]
        lines.append(f"| {label} | {' | '.join(_cell(v) for v in vals)} |")
    return lines


_LOSS_COLS = ("n", "gold", "gold_distilled", "round1", "solver", "loop")
_LOSS_HEAD = ("n", "target clips as notes", "distilled", "ask round 1",
              "ask loop, the solver's letter", "ask loop, grounded")


def loss_table(summary: dict) -> list[str]:
    """The loss, decomposed (:mod:`edge.bench.answering`): accuracy at each step, a row for
    the total and per type, tag and part that has the steps; ``[]`` without them."""
    if not summary["total"].get("loss"):
        return []
    lines = [f"| group | {' | '.join(_LOSS_HEAD)} |", "|---" * (len(_LOSS_HEAD) + 1) + "|"]
    rows = [("**all**", summary["total"])]
    for by in ("type", "tag", "part"):
        rows += [(f"{by}: {name}", s) for name, s in summary.get(f"by_{by}", {}).items()]
    for label, s in rows:
        if s.get("loss"):
            lines.append(f"| {label} | "
                         f"{' | '.join(_cell(s['loss'].get(c)) for c in _LOSS_COLS)} |")
    return lines


def rounds_lines(total: dict) -> list[str]:
    """MERIT Table 10's layout for our run (:func:`~edge.bench.answering.rounds_table`):
    per round, the share of questions answered in it and by it, their accuracy, and the
    cumulative hit rate (a target within ±2 clips of some anchor by that round)."""
    rows = total.get("by_round") or []
    if not rows:
        return []
    lines = ["| round | answered in it | answered by it | accuracy of those | cumulative hit |",
             "|---|---|---|---|---|"]
    lines += [f"| {r['round']} | {r['answered']} | {r['cumulative']} | {_cell(r['accuracy'])} "
              f"| {_cell(r['cumulative_hit'])} |" for r in rows]
    return lines


def _head(result: dict) -> list[str]:
    """What was measured: the set, split, counts, unscored questions, key levers."""
    o = result["options"]
    lines = [f"{result['set']} ({result['split']}): {result['questions']} questions, "
             f"{result['scored']} scored for hits; top-{result['top_n']} anchors "
             f"(hit/all = a / every target clip inside anchors ± Δ), R/nDCG on the top "
             f"{result['deep']}; retrieval {o['retrieval']}, keys {','.join(o['key_types'])}, "
             f"fusion {o['fusion']} k={o['rrf_k']}, auto window {o['auto_window']}"]
    for why, n in result["unscored"].items():
        lines.append(f"not scored for hits: {n} question(s), {why}")
    return lines


def citations_line(cites: dict) -> str:
    """The open answers' citation precision
    (:func:`edge.bench.answering.citation_summary`) in one line."""
    return (f"Citations of the open answers: {cites['citations']} cited clips "
            f"({cites['answers_citing']} answers citing); precision by the report checker "
            f"(support ≥ 0.5) {_cell(cites['precision'])}, mean support "
            f"{_cell(cites['support_mean'])}; within ±2 clips of a target "
            f"{_cell(cites['near_target'])}; before ask's support check "
            f"{_cell(cites['precision_judged'])} / {_cell(cites['near_target_judged'])}; "
            f"answers flagged {_cell(cites['flagged'])}, not found in memory "
            f"{_cell(cites['not_found'])} (judged right: found {_cell(cites['accuracy_found'])}"
            f", not found {_cell(cites['accuracy_not_found'])})")


def markdown(result: dict) -> str:
    """The whole result as Markdown: a retrieval table per mode (hit columns count the
    scored questions; ms counts every question), then the answering table if any."""
    lines = _head(result)
    for mode in result["modes"]:
        s = result["retrieval"][mode]
        lines += ["", f"Retrieval, {MODE_TITLES[mode]}:", ""]
        lines += table(s, _RET_COLS, _RET_HEAD, count="scored")
        if s["total"]["top_n_differs"]:
            lines.append(f"(top-{result['top_n']} differs from the first "
                         f"{result['top_n']} of the top {result['deep']} in "
                         f"{s['total']['top_n_differs']} question(s): retrieved twice)")
    if result.get("answering"):
        o = result["options"]
        lines += ["", f"Answering ({o['loop']} loop, R≤{o['max_rounds']}, "
                  f"Δ{o['delta']}, {result.get('profile', '')} profile):", ""]
        lines += table(result["answering"], _ANS_COLS, _ANS_HEAD)
        t = result["answering"]["total"]
        if t.get("calls_p50") is not None:
            lines += ["", f"Per question: LLM calls p50 {t['calls_p50']} / p95 "
                      f"{t['calls_p95']}, prompt tokens p50 {t['tokens_in_p50']} / p95 "
                      f"{t['tokens_in_p95']}, tokens out p50 {t['tokens_out_p50']} / p95 "
                      f"{t['tokens_out_p95']}, seconds p50 {t['seconds_p50']} / p95 "
                      f"{t['seconds_p95']}"]
        rounds = rounds_lines(t)
        if rounds:
            lines += ["", "Rounds (MERIT Table 10: when questions stop, and when the "
                      "evidence is first reached):", "", *rounds]
        if t.get("citations"):
            lines += ["", citations_line(t["citations"])]
        if t.get("grounding"):
            g = t["grounding"]
            lines += ["", f"Option grounding replaced the solver's letter in {g['replaced']} "
                      f"of {g['n']} questions: {g['won']} made right, {g['lost']} made wrong."]
        loss = loss_table(result["answering"])
        if loss:
            lines += ["", "Where answers are lost (accuracy of the same solver on the "
                      "questions whose target clips are in memory):", "", *loss]
    lines += ["", f"written {result.get('out', '')}"]
    return "\n".join(lines)
