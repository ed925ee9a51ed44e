#!/usr/bin/env bash
# Creates .venv and installs graphrag_got with everything the demo and the tests use.
# Idempotent and quick once done (it reinstalls only when pyproject.toml changes).
# The first run builds llama-cpp-python from source: 4-8 minutes on 2 cores.
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

stamp=.venv/.graphrag_got-installed
want="$(sha256sum pyproject.toml | cut -c1-16)"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
    echo "installing graphrag_got and its dependencies into .venv (first time: builds llama-cpp-python, several minutes)"
    .venv/bin/python -m pip install -q --upgrade pip
    # LLAVA (image support) is not needed; set CMAKE_ARGS yourself for GPU builds (e.g. -DGGML_CUDA=on).
    CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF}" .venv/bin/python -m pip install -q -e ".[llamacpp,dev,bench]"
    echo "$want" > "$stamp"
else
    echo ".venv is up to date"
fi
