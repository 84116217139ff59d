"""``python -m quantize report``: the command line of :mod:`quantize.report`."""

from __future__ import annotations

import time
from pathlib import Path

import click

from quantize.report import (
    Artifact,
    as_row,
    caption_sample,
    embedder_report,
    llm_report,
    perplexity_text,
    retrieval_set,
    write_json,
)


def resolve_artifact(value: str, kind: str) -> Artifact:
    """``NAME=PATH`` (a file) or a model name of the manifest or the user's profiles file
    (its weights resolved as a profile would load them) → :class:`Artifact`. Raises
    :class:`click.BadParameter` for a missing file or an unknown name."""
    if "=" in value:
        name, _, path = value.partition("=")
        p = Path(path).expanduser()
        if not p.is_file():
            raise click.BadParameter(f"{p} is not a file", param_hint=f"--{kind}")
        return Artifact(name or p.stem, p.resolve(), kind)
    from edge.config import models_dir, user_profiles_file
    from models.registry import UnknownModelError, load_manifest_with_user
    from models.resolve import resolve_weights

    try:
        spec = load_manifest_with_user(user_profiles_file()).model(value)
    except UnknownModelError as e:
        raise click.BadParameter(str(e), param_hint=f"--{kind}") from None
    return Artifact(value, Path(resolve_weights(spec, models_dir())), kind)


def _table(rows: list[dict], cols: list[str]) -> str:
    widths = [max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in cols]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))]
    lines += ["  ".join(str(r.get(c, "")).ljust(w) for c, w in zip(cols, widths, strict=True))
              for r in rows]
    return "\n".join(lines)


EMBEDDER_COLS = ["name", "backend", "size_mb", "load_s", "per_s", "peak_rss_mb",
                 "cosine_mean", "cosine_min", "hit@5"]
LLM_COLS = ["name", "size_mb", "load_s", "prompt_tok_s", "gen_tok_s", "peak_rss_mb",
            "perplexity", "keys_usable", "key_agreement"]


@click.command("report")
@click.option("--embedder", "embedders", multiple=True, metavar="NAME[=PATH]",
              help="An embedder: a model name (manifest or your profiles file) or "
                   "LABEL=FILE (.gguf or .onnx). Repeat; the first is the reference.")
@click.option("--llm", "llms", multiple=True, metavar="NAME[=PATH]",
              help="A llama.cpp LLM, as --embedder. Repeat; the first is the reference.")
@click.option("--split", type=click.Choice(["dev", "test", "all"]), default="test",
              show_default=True, help="Hard-set questions for the embedders' hit rate.")
@click.option("--clips", type=click.IntRange(1), default=None,
              help="Only the first N clips of the caption file (and their questions).")
@click.option("--with-captions", is_flag=True,
              help="Embed each clip's caption too, beside its four keys (5x the tokens).")
@click.option("--captions", "n_captions", type=click.IntRange(1), default=8,
              show_default=True, help="Captions for the LLMs' key-extraction agreement.")
@click.option("--threads", type=click.IntRange(1), default=2, show_default=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("benchmarks/results/quantize_report.json"), show_default=True)
def report(embedders: tuple[str, ...], llms: tuple[str, ...], split: str, clips: int | None,
           with_captions: bool, n_captions: int, threads: int, out: Path) -> None:
    """Size, load time, speed, peak RSS and quality against the first (reference) artifact
    of each kind: embedders by cosine agreement and hit@5±2 on the hard question set,
    LLMs by perplexity on EgoLife captions and key-extraction agreement."""
    if not embedders and not llms:
        raise click.UsageError("name at least one --embedder or --llm")
    emb = [resolve_artifact(v, "embedder") for v in embedders]
    lms = [resolve_artifact(v, "llm") for v in llms]
    t0 = time.perf_counter()
    payload: dict = {"threads": threads, "split": split, "clips": clips,
                     "with_captions": with_captions}
    try:
        if emb:
            rs = retrieval_set(split, clips, captions=with_captions)
            click.echo(f"embedders: {len(rs.texts)} texts of {len(rs.clip_at)} clips, "
                       f"{len(rs.questions)} {split} questions", err=True)
            payload["embedders"] = {"artifacts": [as_row(a) for a in emb],
                                    "rows": embedder_report(emb, rs, threads=threads)}
            click.echo(_table(payload["embedders"]["rows"], EMBEDDER_COLS))
        if lms:
            caps = caption_sample(n_captions)
            click.echo(f"LLMs: {len(caps)} captions for keys, perplexity on EgoLife text",
                       err=True)
            payload["llms"] = {"artifacts": [as_row(a) for a in lms],
                               "rows": llm_report(lms, caps, perplexity_text(),
                                                  threads=threads)}
            click.echo(_table(payload["llms"]["rows"], LLM_COLS))
    except RuntimeError as e:
        raise click.ClickException(f"a measurement failed: {e}") from None
    payload["seconds"] = round(time.perf_counter() - t0, 1)
    write_json(out, payload)
    click.echo(f"wrote {out} ({payload['seconds']} s)", err=True)
