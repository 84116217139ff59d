"""``benchmarks/egolife_eval.py`` on a partial memory: a question whose target clips are not
in the memory is skipped for the hit/recall metrics instead of crashing the run."""

from __future__ import annotations

import importlib.util

from tests.conftest import ROOT


def _script():
    spec = importlib.util.spec_from_file_location("egolife_eval",
                                                  ROOT / "benchmarks" / "egolife_eval.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_target_clip_not_in_the_memory_makes_the_question_unscorable():
    eval_ = _script()
    id_of = {0: 11, 1: 12, 2: 13}  # caption record index -> clip id: records 0-2 ingested
    assert eval_.target_clip_ids({"target_clips": [2, 0]}, id_of) == [13, 11]
    assert eval_.target_clip_ids({"target_clips": [2, 7]}, id_of) is None
