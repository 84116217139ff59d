"""The Markdown of an ``edge bench speed`` result (:func:`speed_markdown`): ingest RTF per
stage and tier, answer latency per profile, KNN latency versus memory size, peak RSS per
command, with the machine and package versions that produced them."""

from __future__ import annotations

from .ingest_speed import ingest_note, ingest_table


def _v(x, spec: str = "") -> str:
    """A cell: ``–`` for ``None``, else ``x`` formatted with ``spec``."""
    return "–" if x is None else format(x, spec)


def environment_lines(env: dict | None) -> list[str]:
    """Machine (CPU model, cores, RAM in GB), platform, Python and package versions of a
    result's ``environment`` (:func:`edge.bench.measure.environment`); a line saying it was
    not recorded otherwise."""
    if not env:
        return ["Machine and package versions: not recorded in this result."]
    m = env.get("machine", {})
    pkgs = ", ".join(f"{k} {v}" for k, v in env.get("packages", {}).items() if v)
    return [f"Machine: {m.get('cpu_model')}, {m.get('cores')} cores "
            f"({m.get('cores_usable')} usable), {_v(m.get('ram_gb'))} GB RAM; "
            f"{m.get('platform')}; Python {m.get('python')}; measured {env.get('at', '?')}.",
            f"Packages: {pkgs or 'none recorded'}."]


def ingest_lines(part: dict | None, cpus: int | None = None) -> list[str]:
    """Per profile: the RTF table per file and stage and both tiers, and its note
    (``cpus``: the machine's)."""
    if part is None:
        return ["Not measured in this run (`--only` left out `ingest`)."]
    lines: list[str] = []
    for profile, res in part.items():
        lines += [f"Profile **{profile}** (RTF = seconds per second of footage, ×real time):",
                  "", ingest_table([*res["files"], res["total"]]), "",
                  ingest_note(res, profile, cpus).strip(), ""]
    return lines


def answer_lines(part: dict | None) -> list[str]:
    """One row per profile: ``edge ask`` command seconds p50/p95 (process start to exit),
    the answer's own seconds p50/p95, rounds, LLM calls, peak RSS (MB)."""
    if part is None:
        return ["Not measured in this run (`--only` left out `answer`)."]
    lines = ["| profile | questions (failed) | command s p50 | command s p95 | answer s p50 | "
             "answer s p95 | rounds | LLM calls | peak RSS MB | memory |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for profile, res in part.items():
        s = res["summary"]
        c, a = s["command_seconds"], s["answer_seconds"]
        lines.append(f"| {profile} | {s['n']} ({s['failed']}) | {_v(c['p50'])} | "
                     f"{_v(c['p95'])} | {_v(a['p50'])} | {_v(a['p95'])} | "
                     f"{_v(s['rounds_mean'])} | {_v(s['calls_mean'])} | "
                     f"{_v(s['peak_rss_mb'])} | `{res['memory']}` |")
    lines += ["", "Command seconds include starting Python and loading the models (each "
              "question is a fresh `edge ask`); answer seconds are `ask`'s own (models load "
              "lazily inside it). Warm latency: `edge bench qa --answer`."]
    return lines


def knn_lines(part: dict | None) -> list[str]:
    """Per size: vectors, exact and index p50 ms of one key type's KNN and of the five-type
    max-sim retrieval, recall@10, index build seconds and bytes per key; then the scoped
    searches (last 7 / 180 days)."""
    if part is None:
        return ["Not measured in this run (`--only` left out `knn`)."]
    lines = [f"{part['dim']}-d synthetic keys, {part['queries']} queries, p50 ms (p95):", "",
             "| size | vectors | KNN exact | KNN index | retrieve exact | retrieve index | "
             "recall@10 knn / retrieve | index build s | bytes/key memory / index |",
             "|---|---|---|---|---|---|---|---|---|"]
    scoped = []
    for size, r in part["sizes"].items():
        ex, ix = r["all"]["exact"], r["all"]["index"]
        lines.append(
            f"| {size} | {r['vectors']:,} | {ex['knn']['p50_ms']} ({ex['knn']['p95_ms']}) | "
            f"{ix['knn']['p50_ms']} ({ix['knn']['p95_ms']}) | {ex['retrieve']['p50_ms']} | "
            f"{ix['retrieve']['p50_ms']} | {ix['recall_knn']:.3f} / "
            f"{ix['recall_retrieve']:.3f} | {r['index_build_s']} | "
            f"{r['memory_mb_per_vector'] * 1e6:,.0f} / {r['index_mb_per_vector'] * 1e6:,.0f} |")
        for scope in (k for k in r if k in ("7d", "180d", "1d")):
            e, i = r[scope]["exact"], r[scope]["index"]
            scoped.append(f"| {size} | last {scope} | {e['knn']['p50_ms']} | "
                          f"{i['knn']['p50_ms']} | {e['retrieve']['p50_ms']} | "
                          f"{i['retrieve']['p50_ms']} | {i['recall_retrieve']:.3f} |")
    if scoped:
        lines += ["", "| size | scope | KNN exact | KNN index | retrieve exact | "
                  "retrieve index | recall@10 retrieve |", "|---|---|---|---|---|---|---|",
                  *scoped]
    return lines


def rss_lines(part: dict | None) -> list[str]:
    """One row per profile and command: peak RSS (MB), seconds, exit code."""
    if part is None:
        return ["Not measured in this run (`--only` left out `rss`)."]
    lines = ["| profile | command | peak RSS MB | seconds | exit |", "|---|---|---|---|---|"]
    for profile, rows in part.items():
        for r in rows:
            lines.append(f"| {profile} | `edge {r['command']}` | {_v(r['peak_rss_mb'])} | "
                         f"{r['seconds']:.1f} | {r['rc']}{' (timed out)' if r['timed_out'] else ''}"
                         " |")
    lines += ["", "Peak RSS: the process's own high-water mark (`ru_maxrss` from `wait4`), "
              "MB = 10^6 bytes."]
    return lines


def speed_markdown(result: dict) -> str:
    """The whole ``edge bench speed`` result as Markdown: environment, then a section per
    part (a line saying so for a part not run)."""
    cfg = result.get("config", {})
    cpus = ((result.get("environment") or {}).get("machine") or {}).get("cores")
    lines = ["# edge bench speed", "", *environment_lines(result.get("environment")),
             f"Profiles: {', '.join(cfg.get('profiles', []))}; parts: "
             f"{', '.join(cfg.get('parts', []))}.", "",
             "## Ingest: real-time factor per stage and tier", "",
             *ingest_lines(result.get("ingest"), cpus), "",
             "## Answer latency (`edge ask`, one process per question)", "",
             *answer_lines(result.get("answer")), "",
             "## KNN latency versus memory size", "", *knn_lines(result.get("knn")), "",
             "## Peak RSS per command", "", *rss_lines(result.get("rss")), "",
             f"written {result.get('out', '')}"]
    return "\n".join(lines)
