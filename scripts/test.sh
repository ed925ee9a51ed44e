#!/usr/bin/env bash
# The test command (README). On a fresh machine it installs what the tests need (venv, Python
# dependencies, the small embedded model, the Neo4j jars, Chromium when it can), starts a private
# embedded Neo4j on its own port and home (so it never touches the graph of the demo), runs pytest
# and stops the server. Extra arguments go to pytest, e.g. `scripts/test.sh -k ontology`.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/install_system_deps.sh || echo "warning: could not install Chromium; the browser check will be skipped"

export GRAPHRAG_MODELS_DIR="${GRAPHRAG_MODELS_DIR:-$PWD/.graphrag_got/models}"
export GRAPHRAG_HOME="${GRAPHRAG_TEST_HOME:-$PWD/.graphrag_got/test-home}"
export NEO4J_URI="${GRAPHRAG_TEST_NEO4J_URI:-bolt://127.0.0.1:7697}"
export NEO4J_PASSWORD="${GRAPHRAG_TEST_NEO4J_PASSWORD:-graphrag-got-tests}"
export GRAPHRAG_REQUIRE_LLM=1   # the model is installed below: a missing one is a failure, not a skip
# so is a missing llama-server, which setup.sh builds (unless GRAPHRAG_BUILD_LLAMA_SERVER=0 turned the build off)
export GRAPHRAG_TEST_MODEL="${GRAPHRAG_TEST_MODEL:-qwen2.5-coder-0.5b}"
# with the browser installed, the web page test must run (a broken browser is a failure, not a skip)
if [ -x /usr/bin/chromium ]; then export GRAPHRAG_REQUIRE_BROWSER=1; fi

.venv/bin/graphrag-got model install "$GRAPHRAG_TEST_MODEL"

started=0
if ! .venv/bin/graphrag-got neo4j status >/dev/null 2>&1; then
    .venv/bin/graphrag-got neo4j start
    started=1
fi
cleanup() { if [ "$started" = 1 ]; then .venv/bin/graphrag-got neo4j stop || true; fi; }
trap cleanup EXIT

set +e
.venv/bin/python -m pytest "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
    echo "error: pytest collected no tests; that is a failure" >&2
    rc=1
fi
exit "$rc"
