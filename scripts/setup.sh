#!/usr/bin/env bash
# Creates .venv and installs graphrag_got with everything the demo and the tests use.
# Idempotent and quick once done (it reinstalls only when pyproject.toml changes).
# The first run builds llama-cpp-python (4-8 minutes on 2 cores) and llama.cpp's llama-server (about 6 more)
# from source.
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-python3}"
if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
    echo "error: graphrag_got needs Python >= 3.11 ($PY is $("$PY" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2
    exit 1
fi
if [ ! -x .venv/bin/python ]; then
    echo "creating .venv"
    "$PY" -m venv .venv
fi

# llama.cpp is built for a portable x86-64 baseline (AVX2/FMA/F16C), not -march=native: on machines
# whose CPU advertises AMX/AVX-512 features the kernel or hypervisor does not enable, a native build
# dies with "Illegal instruction" at the first decode. Set LLAMA_CMAKE_ARGS for another build
# (e.g. "-DGGML_CUDA=on" for GPUs, "-DGGML_NATIVE=ON" where the CPU is known to be fine).
LLAMA_CMAKE_ARGS="${LLAMA_CMAKE_ARGS:--DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}"

llama_pin="$(grep -o 'llama-cpp-python==[0-9.]*' pyproject.toml)"
llama_stamp=.venv/.llama-cpp-installed
llama_want="$(echo "$llama_pin $LLAMA_CMAKE_ARGS" | sha256sum | cut -c1-16)"
if [ "$(cat "$llama_stamp" 2>/dev/null || true)" != "$llama_want" ]; then
    echo "building $llama_pin from source into .venv (several minutes)"
    .venv/bin/python -m pip install -q --upgrade pip
    # --no-cache-dir: pip caches built wheels whatever CMAKE_ARGS were, so a wheel built earlier with
    # other flags would otherwise be reused.
    CMAKE_ARGS="$LLAMA_CMAKE_ARGS" .venv/bin/python -m pip install -q --no-cache-dir --force-reinstall --no-deps "$llama_pin"
    echo "$llama_want" > "$llama_stamp"
fi

# llama.cpp's own llama-server (parallel slots) for the embedded model, from the same pinned sources and
# flags; a failed build prints a warning and the embedded model runs in-process.
LLAMA_CMAKE_ARGS="$LLAMA_CMAKE_ARGS" bash scripts/build_llama_server.sh

stamp=.venv/.graphrag_got-installed
want="$(sha256sum pyproject.toml | cut -c1-16)"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
    echo "installing graphrag_got and its dependencies into .venv"
    .venv/bin/python -m pip install -q -e ".[llamacpp,dev,bench]"
    echo "$want" > "$stamp"
else
    echo ".venv is up to date"
fi

