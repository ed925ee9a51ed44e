#!/usr/bin/env bash
# Builds llama.cpp's C++ llama-server (parallel slots with continuous batching, a prompt cache per slot,
# JSON-schema constrained output) into .venv/bin/llama-server, from the llama.cpp sources that the pinned
# llama-cpp-python source package ships (vendor/llama.cpp/tools/server). scripts/setup.sh calls it.
#
# Built once and kept: a stamp in .venv names the pin and the build flags, so a rerun returns at once.
# Network: only the package index (pip downloads the source package); no prebuilt binary, no web UI
# download (LLAMA_USE_PREBUILT_UI=OFF), no curl, no OpenSSL. Only the llama-server target is built.
# Same portable CPU flags as the Python build (LLAMA_CMAKE_ARGS, set by setup.sh; no -march=native).
#
# When the build cannot be done it prints a warning, writes the reason to .venv/.llama-server-build-failed
# and exits 0: the embedded model then runs in-process (llama-cpp-python, one call at a time) and
# `graphrag-got llm status` says why. GRAPHRAG_BUILD_LLAMA_SERVER=0 skips the build on purpose.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${VENV:-.venv}"
# the default of scripts/setup.sh (the same flags as the Python build, so a stamp made by either matches)
LLAMA_CMAKE_ARGS="${LLAMA_CMAKE_ARGS:--DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}"
JOBS="${LLAMA_SERVER_JOBS:-$(nproc 2>/dev/null || echo 2)}"

binary="$VENV/bin/llama-server"
stamp="$VENV/.llama-server-built"
failed="$VENV/.llama-server-build-failed"
log="$VENV/llama-server-build.log"
pin="$(grep -o 'llama-cpp-python==[0-9.]*' pyproject.toml)"
# bump the last word when the cmake options below change, so kept binaries are rebuilt
want="$(echo "$pin $LLAMA_CMAKE_ARGS server-build-1" | sha256sum | cut -c1-16)"

if [ "${GRAPHRAG_BUILD_LLAMA_SERVER:-1}" = 0 ]; then
    echo "llama-server: not built (GRAPHRAG_BUILD_LLAMA_SERVER=0); the embedded model runs in-process"
    exit 0
fi
if [ -x "$binary" ] && [ "$(cat "$stamp" 2>/dev/null || true)" = "$want" ]; then
    echo "llama-server is up to date ($binary)"
    exit 0
fi

give_up() {
    echo "warning: could not build llama-server: $1." >&2
    echo "warning: the embedded model runs in-process instead (llama-cpp-python, one call at a time); log: $log" >&2
    echo "$1 (log: $log)" > "$failed"
    exit 0
}

command -v cmake >/dev/null || give_up "cmake is not installed (apt-get install cmake)"
command -v c++ >/dev/null || give_up "no C++ compiler (apt-get install g++)"
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi

work="$(mktemp -d "${TMPDIR:-/tmp}/llama-server-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
: > "$log"
started=$(date +%s)
echo "building llama-server from $pin's llama.cpp sources ($JOBS jobs; several minutes, first time only)"

# the source package from the index (pip prepares its metadata, which installs its build backend in a
# throw-away environment: also from the index)
"$VENV/bin/python" -m pip download -q --no-deps --no-binary :all: --disable-pip-version-check -d "$work/sdist" \
    "$pin" >>"$log" 2>&1 || give_up "pip could not download the $pin source package"
sdist="$(ls "$work"/sdist/llama_cpp_python-*.tar.gz 2>/dev/null | head -n 1)"
[ -n "$sdist" ] || give_up "pip gave no llama_cpp_python-*.tar.gz source package"
tar -xzf "$sdist" -C "$work" || give_up "cannot unpack $sdist"
src="$(ls -d "$work"/llama_cpp_python-*/vendor/llama.cpp)"
[ -f "$src/tools/server/CMakeLists.txt" ] || give_up "the source package has no vendor/llama.cpp/tools/server"

# shellcheck disable=SC2086  # LLAMA_CMAKE_ARGS is a list of flags
cmake -S "$src" -B "$work/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON $LLAMA_CMAKE_ARGS >>"$log" 2>&1 \
    || give_up "cmake could not configure the llama.cpp sources"
cmake --build "$work/build" --target llama-server -j "$JOBS" >>"$log" 2>&1 || give_up "the build failed"
built="$(ls "$work"/build/bin/llama-server 2>/dev/null || true)"
[ -n "$built" ] || give_up "the build made no bin/llama-server"
"$built" --version >>"$log" 2>&1 || give_up "the built llama-server does not run"

install -m 755 "$built" "$binary"
rm -f "$failed"
echo "$want" > "$stamp"
echo "built $binary in $(( $(date +%s) - started )) s"
