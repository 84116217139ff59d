"""The papers' numbers that ``edge bench report`` puts beside ours, quoted verbatim from the
texts in ``../shared/papers/`` (each cell is the paper's own string: ``"815K"``,
``"6,223"``, ``"0.56"``), each table with its source (table or section).

- MERIT (``000_51894a861163c290.txt``): Tables 1, 3, 5, 6, 7, 10 and 12 — EgoLifeQA
  accuracy (%), neighbor filtering and hit rate (0–1), memory construction cost (calls,
  tokens), top-N, rounds (counts, %), Δ.
- PyraVid (``001_c2d9499b9d2c1755.txt``): its tables' bodies are not in the text; the
  numbers its §4.2, §4.3 and §4.6 quote from Table 1, Table 2 and Figure 3.
- MARQUIS (``002_97c2fe0cf969575b.txt``): Tables 1, 2 (retrieval nDCG/R, 0–1), 3 (oracle
  generation) and 20 (latency per query, minutes).

Cells are strings so that what the report prints is what the paper printed;
:func:`number` reads one as a float for the plots.
"""

from __future__ import annotations

from dataclasses import dataclass

MERIT_FILE = "000_51894a861163c290.txt"
PYRAVID_FILE = "001_c2d9499b9d2c1755.txt"
MARQUIS_FILE = "002_97c2fe0cf969575b.txt"

_EGO = ("EntityLog", "EventRecall", "HabitInsight", "RelationMap", "TaskMaster", "Avg")
_RET = ("nDCG@10", "nDCG@20", "nDCG@100", "R@10", "R@20", "R@100")


@dataclass(frozen=True)
class PaperTable:
    """One quoted table: ``key`` (ours), ``source`` ("MERIT Table 6"), ``title`` (what it
    measures, with units), the paper's text file, ``columns`` (the first names the row) and
    ``rows`` of the paper's own cell strings; ``note``: what the text says around it."""

    key: str
    source: str
    title: str
    file: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    note: str = ""

    def markdown(self) -> list[str]:
        """The table as Markdown lines: a bold source line, the note, the rows."""
        lines = [f"**{self.source}** — {self.title} (`{self.file}`)"]
        if self.note:
            lines.append(f"_{self.note}_")
        lines += ["", "| " + " | ".join(self.columns) + " |", "|---" * len(self.columns) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in self.rows]
        return lines

    def row(self, label: str) -> dict[str, str]:
        """The row whose first cell is ``label`` as {column: cell}; ``KeyError`` if none."""
        for r in self.rows:
            if r[0] == label:
                return dict(zip(self.columns, r))
        raise KeyError(f"{self.source} has no row {label!r}")

    def column(self, name: str) -> list[str]:
        """Every row's cell in column ``name``."""
        i = self.columns.index(name)
        return [r[i] for r in self.rows]


def number(cell: str) -> float | None:
    """A quoted cell as a float: ``"6,223"`` → 6223, ``"815K"`` → 815000, ``"81.2%"`` →
    81.2, ``"36±12"`` → 36 (the mean); ``None`` for ``"-"``/``"–"`` or text."""
    s = cell.split("±")[0].strip().replace(",", "").rstrip("%")
    scale = 1000.0 if s.endswith("K") else 1.0
    try:
        return float(s.rstrip("K")) * scale
    except ValueError:
        return None


MERIT_T1 = PaperTable(
    "merit_t1", "MERIT Table 1", "EgoLifeQA accuracy (%) per question type; baselines from "
    "WorldMM and EGAgent", MERIT_FILE, ("Model", *_EGO), (
        ("Qwen3-VL-8B (uniform sampling)", "35.2", "30.2", "39.3", "46.4", "46.0", "38.6"),
        ("Gemini 2.5 Pro (uniform sampling)", "43.2", "40.5", "41.0", "55.2", "52.4", "46.4"),
        ("GPT-5 (uniform sampling)", "47.2", "42.1", "47.5", "53.6", "55.6", "48.6"),
        ("EgoRAG (GPT-5)", "40.0", "56.3", "62.3", "54.4", "52.4", "52.0"),
        ("Ego-R1 (3B)", "51.2", "53.2", "63.9", "50.4", "50.8", "53.0"),
        ("LightRAG (GPT-5)", "40.8", "48.4", "67.2", "50.4", "44.4", "48.8"),
        ("HippoRAG (GPT-5)", "48.8", "60.3", "70.5", "60.8", "66.7", "59.6"),
        ("Video-RAG (GPT-5)", "49.6", "56.3", "67.2", "55.2", "54.0", "55.4"),
        ("HippoMM (GPT-5)", "45.6", "53.2", "70.5", "55.2", "58.7", "54.6"),
        ("M3-Agent (7B)", "44.4", "54.8", "62.3", "56.8", "54.0", "53.5"),
        ("EGAgent (Gemini 2.5 Pro)", "54.4", "57.1", "60.3", "62.4", "74.6", "57.5"),
        ("WorldMM (Qwen3-VL-8B)", "49.6", "56.4", "63.9", "58.4", "58.7", "56.4"),
        ("WorldMM (GPT-5)", "62.4", "64.3", "75.4", "62.4", "71.4", "65.6"),
        ("MERIT (Qwen3-VL-8B)", "43.2", "54.0", "67.2", "53.6", "65.1", "54.2"),
        ("MERIT (Gemini 2.5 Pro)", "60.8", "61.1", "65.6", "65.6", "73.0", "64.2"),
        ("MERIT (GPT-5)", "67.2", "70.6", "73.8", "74.4", "71.4", "71.2")),
    "EgoLifeQA: 500 questions, videos of 44.3 hours on average (§4.1); captions by "
    "GPT-5-mini per 30 s clip (§4.2).")

MERIT_T3 = PaperTable(
    "merit_t3", "MERIT Table 3", "Neighbor filtering (NF) ablation: accuracy (%) and hit "
    "rate (0–1); the oracle is given the ground-truth 30 s clips", MERIT_FILE,
    ("Setting", "NF", *_EGO, "Hit Rate"), (
        ("Target Time Oracle (Qwen3-VL-8B)", "✗", "60.0", "69.8", "70.5", "54.4", "73.0",
         "64.0", "1.0"),
        ("Target Time Oracle (Qwen3-VL-8B)", "✓", "56.8", "66.7", "68.9", "67.2", "76.2",
         "65.8", "1.0"),
        ("MERIT (Qwen3-VL-8B)", "✗", "41.6", "54.0", "50.8", "42.4", "57.1", "48.0", "0.35"),
        ("MERIT (Qwen3-VL-8B)", "✓", "43.2", "54.0", "67.2", "53.6", "65.1", "54.2", "0.42"),
        ("Target Time Oracle (GPT-5)", "✗", "82.4", "89.7", "85.3", "73.6", "82.5", "82.4",
         "1.0"),
        ("Target Time Oracle (GPT-5)", "✓", "80.8", "88.1", "85.3", "76.8", "88.9", "83.2",
         "1.0"),
        ("MERIT (GPT-5)", "✗", "68.0", "69.8", "68.9", "73.6", "68.3", "70.0", "0.40"),
        ("MERIT (GPT-5)", "✓", "67.2", "70.6", "73.8", "74.4", "71.4", "71.2", "0.56")))

MERIT_T5 = PaperTable(
    "merit_t5", "MERIT Table 5", "QA accuracy (%) and hit rate (0–1) with GPT-5; * = "
    "MERIT's reproduction", MERIT_FILE, ("EXP", "QA Acc", "Hit Rate"), (
        ("EgoRAG*", "49.7", "0.15"), ("WorldMM*", "63.2", "0.53"),
        ("MERIT", "71.2", "0.56")))

MERIT_T6 = PaperTable(
    "merit_t6", "MERIT Table 6", "Memory construction cost with GPT-5 (EgoLifeQA); * = "
    "MERIT's reproduction", MERIT_FILE,
    ("EXP", "LLM Call Count", "Input Tokens", "Output Tokens"), (
        ("EgoRAG*", "339", "1,049K", "247K"), ("WorldMM*", "23,731", "6,860K", "2,472K"),
        ("MERIT", "6,223", "815K", "288K")),
    "MERIT's 6,223 calls are one key extraction per 30 s caption (≈ 51.9 h of clips).")

MERIT_T7 = PaperTable(
    "merit_t7", "MERIT Table 7", "Retrieved clips per round (Top N) vs accuracy (%) per "
    "solver", MERIT_FILE, ("Solver", "Top N", *_EGO), (
        ("Qwen3-VL-4B", "5", "41.6", "47.6", "63.9", "37.6", "55.6", "46.6"),
        ("Qwen3-VL-4B", "10", "37.6", "53.2", "59.0", "39.2", "52.4", "46.4"),
        ("Qwen3-VL-8B", "5", "43.2", "54.0", "67.2", "53.6", "65.1", "54.2"),
        ("Qwen3-VL-8B", "10", "44.0", "57.9", "63.9", "40.8", "68.3", "52.2"),
        ("Gemini 2.5 pro", "5", "53.6", "62.7", "60.7", "65.6", "66.7", "61.4"),
        ("Gemini 2.5 pro", "10", "60.8", "61.1", "65.6", "65.6", "73.0", "64.2"),
        ("GPT-5", "5", "62.4", "67.5", "73.8", "68.0", "69.8", "67.4"),
        ("GPT-5", "10", "67.2", "70.6", "73.8", "74.4", "71.4", "71.2")))

MERIT_T10 = PaperTable(
    "merit_t10", "MERIT Table 10", "Questions terminated at each round: count, proportion "
    "(%), accuracy (%) and cumulative hit rate (%), GPT-5 on EgoLifeQA", MERIT_FILE,
    ("Round", "WorldMM* Count", "WorldMM* Prop.", "WorldMM* Acc.", "WorldMM* C. HR",
     "MERIT Count", "MERIT Prop.", "MERIT Acc.", "MERIT C. HR"), (
        ("0", "3", "0.6", "100.0", "0.0", "1", "0.2", "100.0", "0.0"),
        ("1", "214", "42.8", "73.4", "37.4", "341", "68.2", "74.5", "46.4"),
        ("2", "80", "16.0", "56.3", "45.6", "64", "12.8", "71.9", "52.6"),
        ("3", "68", "13.6", "51.5", "49.2", "32", "6.4", "62.5", "54.4"),
        ("4", "27", "5.4", "55.6", "51.6", "16", "3.2", "62.5", "54.6"),
        ("5", "108", "21.6", "56.5", "53.0", "46", "9.2", "54.3", "55.6"),
        ("Total", "500", "100.0", "63.2", "53.0", "500", "100.0", "71.2", "55.6")),
    "Avg. Rounds 2.45 (WorldMM*) / 1.72 (MERIT); ≤ 2 Rounds 59.4% / 81.2%.")

MERIT_T12 = PaperTable(
    "merit_t12", "MERIT Table 12", "Neighbor window Δ (clips each side) vs accuracy (%) and "
    "hit rate (0–1), GPT-5 on EgoLifeQA", MERIT_FILE,
    ("Δ", "Ent.", "Evt.", "Hab.", "Rel.", "Task.", "Avg.", "Hit."), (
        ("0", "68.0", "69.8", "68.9", "73.6", "68.3", "70.0", "0.40"),
        ("1", "64.8", "75.4", "70.5", "72.8", "68.6", "70.6", "0.52"),
        ("2", "67.2", "70.6", "73.8", "74.4", "71.4", "71.2", "0.56"),
        ("3", "64.0", "71.4", "72.1", "79.2", "71.4", "71.6", "0.60"),
        ("4", "72.0", "69.8", "70.5", "74.4", "74.6", "72.2", "0.61")),
    "The default Δ=2; the hit rate counts a target inside the anchors' ±Δ windows.")

PYRAVID_T1 = PaperTable(
    "pyravid_t1", "PyraVid §4.2 (Table 1)", "Best results, PyraVid(32B): LLM-as-a-judge "
    "score on M3-Bench, multiple-choice accuracy (%) on Video-MME (Long) and LVBench",
    PYRAVID_FILE, ("System", "M3-Bench-robot", "M3-Bench-web", "Video-MME (Long)", "LVBench"),
    (("PyraVid(32B)", "46.7", "56.3", "69.1", "58.5"),),
    "Table 1's body is not in the text; §4.2 quotes these. Memory built by "
    "Gemini-2.0-Flash from 30 s clips (§4.1, B.1).")

PYRAVID_T2 = PaperTable(
    "pyravid_t2", "PyraVid §4.3 (Table 2)", "Ablations: accuracy (%) on Video-MME and "
    "LVBench", PYRAVID_FILE, ("Variant", "Video-MME", "LVBench"), (
        ("PyraVid", "69.1", "58.5"),
        ("plain memory without links", "58.7", "53.4"),
        ("without global memory or links", "59.5", "53.5"),
        ("without expansion", "65.9", "54.3"),
        ("without pruning", "63.5", "–"),
        ("without visual memory", "66.7", "56.3")),
    "Table 2's body is not in the text; §4.3 quotes these (no LVBench figure for the "
    "variant without pruning).")

PYRAVID_LATENCY = PaperTable(
    "pyravid_latency", "PyraVid §4.6 (Figure 3)", "Mean latency per question (unit not "
    "stated in the text)", PYRAVID_FILE, ("Variant", "VideoMME", "LVBench"),
    (("Hierarchical Memory w/o prune", "5.47", "21.99"),),
    "The variant with the largest latency; the full design's is only plotted.")

MARQUIS_T1 = PaperTable(
    "marquis_t1", "MARQUIS Table 1", "First-stage video retrieval on MAGMaR2026 (0–1)",
    MARQUIS_FILE, ("Run", *_RET), (
        ("OmniEmbed", "0.195", "0.229", "0.311", "0.190", "0.276", "0.494"),
        ("Max Sim", "0.722", "0.743", "0.784", "0.639", "0.731", "0.826"),
        ("Mean Sim", "0.637", "0.650", "0.696", "0.544", "0.618", "0.736"),
        ("Sum Sim", "0.703", "0.725", "0.776", "0.604", "0.698", "0.818"),
        ("RRF K=10", "0.700", "0.739", "0.777", "0.612", "0.735", "0.832"),
        ("RRF K=60", "0.695", "0.728", "0.773", "0.599", "0.714", "0.823"),
        ("RRF K=100", "0.688", "0.719", "0.767", "0.590", "0.704", "0.818"),
        ("Weighted RRF", "0.699", "0.730", "0.778", "0.604", "0.714", "0.832")))

MARQUIS_T2 = PaperTable(
    "marquis_t2", "MARQUIS Table 2", "Retrieval reranked with RankVideo (RV), 0–1",
    MARQUIS_FILE, ("Run", *_RET), (
        ("OmniEmbed + RV", "0.542", "0.534", "0.546", "0.423", "0.462", "0.494"),
        ("Max Sim + RV", "0.399", "0.405", "0.425", "0.344", "0.383", "0.437"),
        ("Mean Sim + RV", "0.740", "0.723", "0.750", "0.637", "0.665", "0.736"),
        ("Sum Sim + RV", "0.747", "0.758", "0.800", "0.636", "0.711", "0.818"),
        ("RRF K=10 + RV", "0.759", "0.771", "0.811", "0.652", "0.735", "0.832"),
        ("RRF K=60 + RV", "0.754", "0.765", "0.807", "0.641", "0.716", "0.823"),
        ("RRF K=100 + RV", "0.746", "0.757", "0.799", "0.636", "0.711", "0.818"),
        ("Weighted RRF + RV", "0.757", "0.768", "0.810", "0.650", "0.725", "0.832")),
    "The abstract's headline: nDCG@10 from 0.195 to 0.759.")

MARQUIS_T3 = PaperTable(
    "marquis_t3", "MARQUIS Table 3", "Oracle article generation: human score (1–5), best "
    "votes, information and citation precision/recall (%)", MARQUIS_FILE,
    ("System", "Human Score", "Best Votes", "Best %", "Info P", "Info R", "Cite P",
     "Cite R"), (
        ("CAG (baseline)", "3.09", "1", "1.8%", "76.4", "41.0", "61.7", "22.8"),
        ("Bullet", "2.67", "0", "0.0%", "71.1", "39.4", "60.4", "23.7"),
        ("GINGER", "3.12", "6", "10.5%", "77.6", "40.4", "64.3", "22.6"),
        ("MARQUIS-RLM", "3.30", "3", "5.3%", "70.8", "38.5", "59.2", "27.2"),
        ("SS QA Base", "3.07", "6", "10.5%", "33.1", "30.6", "27.7", "28.1"),
        ("SS-QA-GINGER", "3.42", "10", "17.5%", "54.4", "32.4", "32.6", "23.8"),
        ("Iter-QA-Base", "3.83", "8", "14.0%", "34.7", "31.3", "26.8", "25.8"),
        ("Iter-QA-GINGER", "3.69", "5", "8.8%", "34.5", "29.0", "25.7", "22.6")))

MARQUIS_T20 = PaperTable(
    "marquis_t20", "MARQUIS Table 20", "RLM controller per query, averaged over 19 queries "
    "and two runs: judge score (%), facts per iteration, wall time (min), tokens (K), root "
    "LLM time (s)", MARQUIS_FILE,
    ("Row", "Judge (%)", "Facts/Iter", "Wall (min)", "Tokens (K)", "Root LLM (s)"),
    (("Avg.", "92±2", "1.1±0.4", "36±12", "438±109", "326±72"),),
    "“The average wall time per query is 36±12 minutes” (Appendix H).")

TABLES: tuple[PaperTable, ...] = (
    MERIT_T1, MERIT_T3, MERIT_T5, MERIT_T6, MERIT_T7, MERIT_T10, MERIT_T12,
    PYRAVID_T1, PYRAVID_T2, PYRAVID_LATENCY, MARQUIS_T1, MARQUIS_T2, MARQUIS_T3, MARQUIS_T20)
"""Every quoted table, in the report's order."""

MERIT_TABLE6_COST = {"clips": 6223,
                     **{k: int(number(MERIT_T6.row("MERIT")[c]) or 0) for k, c in (
                         ("llm_calls", "LLM Call Count"), ("tokens_in", "Input Tokens"),
                         ("tokens_out", "Output Tokens"))}}
"""MERIT Table 6's MERIT row as numbers: 6,223 calls (one per 30 s clip), 815K tokens in,
288K out."""
