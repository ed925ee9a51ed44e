"""`graphrag-got ask impact TARGET` and `ask impact --diff [REV]`: what a change affects in a code graph (no LLM).

Registered under the ``ask`` group by :mod:`graphrag_got.commands.ask`; the analysis itself is
:mod:`graphrag_got.code.impact` (one target) and :mod:`graphrag_got.code.diff` (a git change).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from graphrag_got.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover - imported when the command runs, not when the parser is built
    from graphrag_got.config import Settings


def add_parser(asub: "argparse._SubParsersAction") -> None:
    im = asub.add_parser("impact", help="code graph: what calls, subclasses, imports, tests or (coverage) ran TARGET, "
                                        "or what a git change affects (--diff) (no LLM)")
    im.add_argument("target", metavar="TARGET", nargs="?",
                    help="a file path (pkg/mod.py), a qualified name or its tail (pkg.mod.func, Class.method)")
    im.add_argument("--diff", nargs="?", const="", default=None, metavar="REV",
                    help="instead of TARGET, the lines a git change touches: no REV = the working tree against HEAD, "
                         "REV = the working tree against REV, A..B = commit B against A, A...B = B against the merge "
                         "base (a pull request)")
    im.add_argument("--staged", action="store_true",
                    help="--diff: the index against HEAD (what a pre-commit hook is about to commit)")
    im.add_argument("--root", default=".", metavar="DIR",
                    help="--diff: the folder the code graph was extracted from (default: the current one)")
    im.add_argument("--hops", type=int, default=None,
                    help="stop the closure over callers, subclasses and importers after N steps (default: to a fixed "
                         "point, capped by GRAPHRAG_IMPACT_MAX_NODES); tests are not a step")
    im.add_argument("--json", action="store_true", help="print the result as JSON (for CI: pytest_args lists the tests)")
    im.add_argument("--server", metavar="URL", default=None,
                    help="--diff: ask a running `graphrag-got serve --code-root DIR` at URL (e.g. http://127.0.0.1:8765) "
                         "instead of reading the graph here: a pre-commit hook's answer without this process's "
                         "start-up; the change is read from the server's repository")
    im.set_defaults(func=run)

    orph = asub.add_parser("orphans", help="code graph: functions and classes nothing defines, calls or tests, by file "
                                           "(no LLM)")
    orph.add_argument("--json", action="store_true", help="print the result as JSON")
    orph.set_defaults(func=run_orphans)


def run_orphans(args: argparse.Namespace, settings: Settings) -> int:
    from graphrag_got.code.orphans import orphans
    from graphrag_got.graph.db import connect

    with connect(settings.neo4j) as driver:
        report = orphans(driver, settings.neo4j)
    if args.json:
        print(json.dumps(report.to_data(), ensure_ascii=False, indent=2))
    else:
        for line in report.lines():
            print(line)
    return 0


def run(args: argparse.Namespace, settings: Settings) -> int:
    diff = args.diff is not None or args.staged
    if diff == (args.target is not None):
        raise ConfigError("give either TARGET or --diff [REV] (`ask impact pkg.mod.func`, `ask impact --diff HEAD~1..HEAD`)")
    if not diff and args.root != ".":
        raise ConfigError("--root applies to --diff only")
    if diff and args.diff:
        from graphrag_got.code.gitdiff import check_revision

        check_revision(args.diff)
    if args.server:
        if not diff:
            raise ConfigError("--server applies to --diff only")
        return _from_server(args)
    from graphrag_got.graph.db import connect

    driver = connect(settings.neo4j)
    with driver:
        if diff:
            from graphrag_got.code.diff import diff_impact

            result = diff_impact(driver, settings.neo4j, args.root, args.diff or None, code=settings.code,
                                 staged=args.staged, hops=args.hops)
        else:
            from graphrag_got.code.impact import impact

            result = impact(driver, settings.neo4j, args.target, hops=args.hops, code=settings.code)
    if args.json:
        print(json.dumps(result.to_data(), ensure_ascii=False, indent=2))
    else:
        for line in result.lines():
            print(line)
    return 0


def _from_server(args: argparse.Namespace) -> int:
    """POST the change to a running service's /impact/diff (stdlib only: the point is a fast start)."""
    import http.client
    import urllib.error
    import urllib.request

    from graphrag_got.errors import SearchError

    url = args.server.rstrip("/") + "/impact/diff"
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"--server must be an http:// or https:// URL, got {args.server!r}")
    body = json.dumps({"diff": args.diff or None, "staged": args.staged, "hops": args.hops}).encode("utf-8")
    req = urllib.request.Request(url, data=body, headers={"content-type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=300) as res:  # noqa: S310 - a URL the user gave
            raw = res.read()
    except urllib.error.HTTPError as exc:
        try:
            message = json.loads(exc.read().decode("utf-8"))["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = f"HTTP {exc.code}"
        raise SearchError(f"{url} refused the change: {message}") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:  # HTTPException: not HTTP
        detail = getattr(exc, "reason", None) or f"{type(exc).__name__}: {exc}"
        raise SearchError(f"no answer from {url} ({detail}); start it with `graphrag-got serve --code-root DIR` or "
                          "drop --server") from None
    except ValueError as exc:  # http.client.InvalidURL: a port that is not a number
        raise ConfigError(f"--server {args.server!r} is not a usable URL ({exc})") from None
    data = _diff_answer(url, raw)
    if args.json:
        print(json.dumps(data, ensure_ascii=False, indent=2))
        return 0
    tests = data.get("pytest_args") or []
    print(f"{data.get('change', 'the change')}: {len(tests)} test(s) to run" + (":" if tests else ""))
    for t in tests:
        print(f"  {t}")
    for w in data.get("warnings") or []:
        print(f"warning: {w}")
    return 0


def _diff_answer(url: str, raw: bytes) -> dict[str, Any]:
    """The JSON object of ``ask impact --diff --json`` a server sent, or a SearchError saying what came instead
    (another program on that port, a proxy's error page, an older or newer format)."""
    from graphrag_got.errors import SearchError

    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError:  # not UTF-8, or not JSON
        shown = raw[:80].decode("utf-8", "replace")
        raise SearchError(f"{url} answered with something that is not JSON ({len(raw)} bytes, starting {shown!r}); "
                          "is it a `graphrag-got serve --code-root DIR`? Check the URL or drop --server") from None
    fmt = data.get("format") if isinstance(data, dict) else None
    if not (isinstance(fmt, str) and fmt.startswith("graphrag_got.impact-diff/")
            and isinstance(data.get("pytest_args"), list) and isinstance(data.get("warnings", []), list)):
        raise SearchError(f"{url} answered with JSON that is not the impact of a change (format {fmt!r}, expected "
                          "graphrag_got.impact-diff/... with pytest_args); is it a `graphrag-got serve --code-root "
                          "DIR` of this version? Check the URL or drop --server")
    return data
