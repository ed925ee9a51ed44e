"""`graphrag-got ask impact TARGET`: the blast radius of a change in a code graph (no LLM).

Registered under the ``ask`` group by :mod:`graphrag_got.commands.ask`; the analysis itself is
:mod:`graphrag_got.code.impact`.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - imported when the command runs, not when the parser is built
    from graphrag_got.config import Settings



def add_parser(asub: "argparse._SubParsersAction") -> None:
    im = asub.add_parser("impact", help="code graph: what calls, subclasses, imports, tests or (coverage) ran TARGET (no LLM)")
    im.add_argument("target", metavar="TARGET",
                    help="a file path (pkg/mod.py), a qualified name or its tail (pkg.mod.func, Class.method)")
    im.add_argument("--hops", type=int, default=None,
                    help="stop the closure over callers, subclasses and importers after N steps (default: to a fixed "
                         "point, capped by GRAPHRAG_IMPACT_MAX_NODES); tests are not a step")
    im.add_argument("--json", action="store_true", help="print the result as JSON (for CI: pytest_args lists the tests)")
    im.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from graphrag_got.code.impact import impact
    from graphrag_got.graph.db import connect

    driver = connect(settings)
    with driver:
        result = impact(driver, settings, args.target, hops=args.hops)
    if args.json:
        print(json.dumps(result.to_data(), ensure_ascii=False, indent=2))
    else:
        for line in result.lines():
            print(line)
    return 0
