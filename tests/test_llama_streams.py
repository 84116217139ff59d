"""Loading a llama.cpp model must not silence the process's stdout/stderr.

llama-cpp-python's ``verbose=False`` points fds 1 and 2 at /dev/null while a model loads;
in the recorder that swallowed the storage policy's "deleted raw clip" line (written by the
supervisor thread while the worker loaded the memory LLM). Real model, real threads.
"""

import subprocess
import sys
import textwrap

from tests.conftest import ROOT

SCRIPT = textwrap.dedent("""
    import logging, sys, threading, time
    from edge.config import models_dir
    from models import load_manifest
    from models.llama_chat import LlamaCppLLM
    from models.resolve import resolve_weights

    spec = load_manifest().profile("tiny").spec("memory_llm")
    weights = resolve_weights(spec, models_dir())
    log = logging.getLogger("t")
    log.setLevel(logging.INFO)
    log.addHandler(logging.StreamHandler(sys.stderr))
    stop, written = threading.Event(), [0]

    def writer():
        while not stop.is_set():
            written[0] += 1
            log.info("line %d", written[0])
            print(f"out {written[0]}", flush=True)
            time.sleep(0.005)

    t = threading.Thread(target=writer)
    t.start()
    time.sleep(0.05)
    llm = LlamaCppLLM(weights)
    time.sleep(0.05)
    stop.set()
    t.join()
    print("WROTE", written[0], flush=True)
""")


def test_another_threads_output_survives_a_model_load():
    run = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    written = int(run.stdout.split("WROTE ")[1])
    err = run.stderr.splitlines()
    assert written > 10
    assert sum(ln.startswith("line ") for ln in err) == written  # none lost to /dev/null
    assert sum(ln.startswith("out ") for ln in run.stdout.splitlines()) == written
    # llama.cpp's own load messages go to the `llama_cpp` logger, not the terminal
    assert [ln for ln in err if not ln.startswith("line ")] == []
