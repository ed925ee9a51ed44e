#!/usr/bin/env bash
# The main job on embedded defaults (README): venv + dependencies, then `graphrag-got demo`, which
# installs the embedded model if needed, starts Neo4j if none answers, extracts, loads, detects and
# summarizes communities, asks a local and a global question and writes the reports.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/graphrag-got demo "$@"
