"""`graphrag-got serve`: the read-only HTTP API and the web page (FastAPI on uvicorn)."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import socket
from typing import TYPE_CHECKING

from graphrag_got.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover - imported when the command runs, not when the parser is built
    from pathlib import Path

    from graphrag_got.config import Settings

logger = logging.getLogger(__name__)


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser(
        "serve", help="serve the read-only HTTP API (/ask, /entities, /communities, /health) and its web page",
        description="HTTP API and web page over the graph in Neo4j. Read-only; no authentication, so it "
                    "listens on 127.0.0.1 unless --host says otherwise.")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    p.add_argument("--port", type=int, default=8765, help="port to listen on (default: %(default)s)")
    p.add_argument("--code-root", metavar="DIR", default=None,
                   help="also answer POST /impact/diff (`ask impact --diff --server URL`) for the git repository DIR, "
                        "the folder the code graph was extracted from")
    p.add_argument("--allow-examples", action="store_true",
                   help="let the review page (/review) save corrected passages as examples beside the ontology "
                        "(POST /examples); loopback --host only, unless --allow-examples-remote is given too")
    p.add_argument("--allow-examples-remote", action="store_true",
                   help="with --allow-examples and a --host other than loopback: anyone who reaches the address "
                        "can add examples to the ontology")
    p.set_defaults(func=run)


def _check_bind(host: str, port: int) -> None:
    """Fail with one clear message when the address cannot be used (uvicorn would exit with a log line)."""
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port must be from 0 to 65535, got {port}")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ConfigError(f"--host {host!r} is not an address of this machine ({exc.strerror})") from None
    family, kind, proto, _, addr = infos[0]
    with socket.socket(family, kind, proto) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(addr)
        except OSError as exc:
            raise ConfigError(f"cannot listen on {host}:{port} ({exc.strerror}); another server may use it: "
                              "pass another --port") from None


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _code_root(given: str) -> Path:
    """The folder ``--code-root`` names, resolved; refused at startup unless it is a folder inside a git
    repository (POST /impact/diff reads every change with git: a server that could answer none of them
    should not start)."""
    from pathlib import Path

    from graphrag_got.code.gitdiff import GitError, git

    root = Path(given).resolve()
    if not root.is_dir():
        raise ConfigError(f"--code-root {given!r} is not a folder (give the folder the code graph was extracted "
                          "from, inside a git repository)")
    try:
        git(root, "rev-parse", "--show-prefix")
    except GitError as exc:
        raise ConfigError(f"--code-root {given!r} is not inside a git repository ({exc}); POST /impact/diff reads "
                          "changes with git: give the folder the code graph was extracted from, inside its "
                          "repository") from None
    return root


def _check_examples(args: argparse.Namespace) -> bool:
    """Whether examples may be saved: asked for, and on loopback unless remote saving is asked for too."""
    allow = bool(getattr(args, "allow_examples", False))
    remote = bool(getattr(args, "allow_examples_remote", False))
    if remote and not allow:
        raise ConfigError("--allow-examples-remote goes with --allow-examples")
    if allow and not remote and not _is_loopback(args.host):
        raise ConfigError(f"--allow-examples writes beside the ontology and the service has no authentication: it "
                          f"listens on loopback only, not on --host {args.host}; add --allow-examples-remote if "
                          "everyone who reaches that address may add examples")
    return allow


def run(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from graphrag_got.service import create_app

    allow_examples = _check_examples(args)
    code_root = _code_root(args.code_root) if args.code_root else None
    _check_bind(args.host, args.port)
    if not _is_loopback(args.host):
        logger.warning("listening on %s: the service has no authentication, anyone who reaches this address "
                       "can ask questions (and spend LLM time)", args.host)
    app = create_app(settings, host=args.host, code_root=code_root, allow_examples=allow_examples)
    print(f"serving http://{args.host}:{args.port}/ (API: /ask, /entities/NAME, /communities, /health, review pages "
          f"/review{' with saving examples' if allow_examples else ''}"
          + (f", /impact/diff for {code_root}" if code_root else "") + f"; Neo4j {settings.neo4j.uri}); Ctrl-C stops",
          flush=True)
    # log_config=None: uvicorn's loggers go through ours (stderr); access lines come from the app (at -v)
    server = uvicorn.Server(uvicorn.Config(app, host=args.host, port=args.port, log_config=None, access_log=False,
                                           timeout_graceful_shutdown=5))
    server.run()
    print("stopped")
    return 0
