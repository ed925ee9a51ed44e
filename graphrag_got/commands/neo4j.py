"""`graphrag-got neo4j start|stop|status`: the embedded Neo4j 5.26 server (see neo4j_server)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from graphrag_got.errors import Neo4jServerError

if TYPE_CHECKING:  # pragma: no cover - imported when the command runs, not when the parser is built
    from graphrag_got.config import Settings


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("neo4j", help="start, stop or inspect the embedded Neo4j server (no Docker needed)")
    nsub = p.add_subparsers(dest="neo4j_command", metavar="{start,stop,status}", required=True)

    ps = nsub.add_parser(
        "start",
        help="start the embedded server on NEO4J_URI's port (downloads the jars once with Maven); "
        "does nothing when a server already answers there",
    )
    ps.add_argument("--wait", type=float, default=180, metavar="SECONDS", help="start-up timeout (default 180)")
    ps.set_defaults(func=run)

    pt = nsub.add_parser("stop", help="stop the embedded server started by `neo4j start` (clean shutdown)")
    pt.set_defaults(func=run)

    pu = nsub.add_parser("status", help="is a server answering at NEO4J_URI? exit code 0 yes, 3 no")
    pu.set_defaults(func=run)
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from graphrag_got.commands.render import progress_bar
    from graphrag_got.graph import server as srv

    cmd = getattr(args, "neo4j_command", None)
    if cmd == "start":
        with progress_bar() as progress:
            info = srv.ensure_running(settings.neo4j, wait_s=args.wait, files=settings.files, progress=progress)
        if not info.started:
            owner = f"embedded, pid {info.pid}" if info.pid else "not started by graphrag-got"
            print(f"Neo4j {info.version or ''} already answers at {info.uri} ({owner}); nothing to do".replace("  ", " "))
            return 0
        print(f"Neo4j {info.version} started at {info.uri}")
        print(f"  pid {info.pid}, ready in {info.startup_s:.1f} s")
        if info.jars is not None:
            jar_note = (f"downloaded now ({info.jars.download_s:.1f} s)" if info.jars.downloaded else "cached")
            print(f"  jars: {info.jars.jar_count} files, {info.jars.size_mb:.1f} MB in {info.jars.lib_dir}, {jar_note}")
        print(f"  home {info.home}")
        print(f"  log  {info.log_path}")
        print("  stop it with `graphrag-got neo4j stop`")
        return 0
    if cmd == "stop":
        pid = srv.stop(settings.files)
        if pid is None:
            st = srv.status(settings.neo4j, files=settings.files)
            extra = f"; a server not started by graphrag-got still answers at {st.uri}" if st.answering else ""
            print(f"the embedded Neo4j (home {srv.server_home(settings.files)}) is not running{extra}")
        else:
            print(f"Neo4j stopped (pid {pid}); data kept in {srv.server_home(settings.files)}")
        return 0
    if cmd == "status":
        st = srv.status(settings.neo4j, files=settings.files)
        if st.answering:
            auth = "credentials accepted" if st.auth_ok else f"credentials REFUSED ({st.detail})"
            print(f"{st.uri}: answering, {st.server_agent or 'Neo4j'}, {auth}")
        else:
            print(f"{st.uri}: not answering ({st.detail})")
        if st.pid is not None:
            print(f"embedded server: running, pid {st.pid}, home {st.home}, log {st.log_path}")
        else:
            print(f"embedded server: not running (home {st.home})")
        return 0 if st.answering else 3
    raise Neo4jServerError("choose a neo4j subcommand: start, stop or status")
