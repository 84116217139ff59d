"""Two recall levers of issue 25 that ``edge bench qa`` flags cannot express: MiniLM fused
as a second voice beside EmbeddingGemma, and EmbeddingGemma's other query prompts.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/second_voice.py GEMMA.db MINILM.db \\
        --split dev [--weights 0,1,0.5] [--prompts]

``GEMMA.db`` and ``MINILM.db`` are the same caption file ingested into two memories (same
clip ids), one embedded by the ``small`` profile (EmbeddingGemma), one by ``tiny``
(MiniLM). Every ranked list of round 1 (:func:`edge.answer.search.ranked_in_scope`, so
choice slots and spreading work as in ``ask``) becomes the weighted RRF (k = the Gemma
memory's tuned k) of Gemma's list and MiniLM's list for the same queries (MiniLM's own
k = 60, 1:1 inside its list), MiniLM weighted ``w`` (0: Gemma alone). ``--prompts`` also
runs Gemma alone with each of its model card's query prompts. Writes
``benchmarks/results/second_voice_<split>.json`` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import edge.answer.search as search  # noqa: E402
import edge.bench.qa as qa  # noqa: E402
from benchmarks.embedder_dims import summary, table  # noqa: E402
from edge.answer import AskOptions  # noqa: E402
from edge.answer.options import with_fusion_of  # noqa: E402
from edge.bench.questions import load_questions, resolve_set, select  # noqa: E402
from edge.config import models_dir  # noqa: E402
from edge.recall.retrieval import fuse  # noqa: E402
from edge.store import Memory  # noqa: E402
from edge.store.embedding import memory_embedder  # noqa: E402
from models import ModelHub, load_manifest  # noqa: E402

PROMPTS = ("task: search result | query: ", "task: question answering | query: ",
           "task: fact checking | query: ")
"""EmbeddingGemma's query prompts (model card) that fit a question; the first ships."""


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("gemma", type=Path)
    ap.add_argument("minilm", type=Path)
    ap.add_argument("--split", default="dev")
    ap.add_argument("--weights", default="0,1,0.5",
                    help="MiniLM's weights in the fusion, comma-separated (0: Gemma alone)")
    ap.add_argument("--prompts", action="store_true",
                    help="also Gemma alone with each query prompt, question alone")
    args = ap.parse_args(argv)

    qpath, cpath, _ = resolve_set("hard")
    small = ModelHub(load_manifest().profile("small"), models_dir())
    tiny = ModelHub(load_manifest().profile("tiny"), models_dir())
    results: list[dict] = []
    ranked_in_scope = search.ranked_in_scope
    with Memory(args.gemma, readonly=True) as gemma, \
            Memory(args.minilm, readonly=True) as minilm:
        g_emb, m_emb = memory_embedder(gemma, small), memory_embedder(minilm, tiny)
        k = with_fusion_of(AskOptions(), g_emb).rrf_k
        index = qa.caption_index(gemma, cpath)
        questions = select(load_questions(qpath), args.split)
        m_vecs: dict[str, object] = {}
        for w in (float(x) for x in args.weights.split(",")):
            def voiced(memory, queries, vecs, opts, scope, top_n, w=w):
                a = ranked_in_scope(memory, queries, vecs, opts, scope, top_n)
                if not w:
                    return a
                mv = [m_vecs.setdefault(q, m_emb.embed_one(q, query=True)) for q in queries]
                b = ranked_in_scope(minilm, queries, mv,
                                    replace(opts, rrf_k=60, dense_weight=1.0), scope, top_n)
                return fuse([a, b], method="wrrf", k=k, weights=[1.0, w], top_n=top_n)

            search.ranked_in_scope = voiced
            try:
                rows = qa.run_retrieval(gemma, small, questions, index, AskOptions())
            finally:
                search.ranked_in_scope = ranked_in_scope
            name = "EmbeddingGemma alone" if not w else f"+ MiniLM, weight {w:g}"
            results.append({"setting": name,
                            **summary({"retrieval": qa.retrieval_summary(rows)})})
            print(json.dumps(results[-1]), flush=True)
        if args.prompts:
            for prompt in PROMPTS:
                g_emb.query_prefix = prompt
                rows = qa.run_retrieval(gemma, small, questions, index, AskOptions(),
                                        modes=("question",))
                results.append({
                    "setting": f"query prompt {prompt.split('|')[0].strip()!r}",
                    **summary({"retrieval": qa.retrieval_summary(rows, modes=("question",))})})
                print(json.dumps(results[-1]), flush=True)

    out = ROOT / "benchmarks" / "results" / f"second_voice_{args.split}.json"
    out.write_text(json.dumps({"split": args.split, "results": results}, indent=1) + "\n")
    print("\n".join(table(results, "setting", ms_options=True)))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
