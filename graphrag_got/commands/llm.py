"""`graphrag-got llm start|stop|status`: the embedded model's llama-server (see graphrag_got.llm.server)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from graphrag_got.errors import LLMServerError

if TYPE_CHECKING:  # pragma: no cover - imported when the command runs, not when the parser is built
    from graphrag_got.config import Settings


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("llm", help="start, stop or inspect the embedded model's llama-server (parallel slots)")
    lsub = p.add_subparsers(dest="llm_command", metavar="{start,stop,status}", required=True)

    ps = lsub.add_parser(
        "start",
        help="serve the embedded model (GRAPHRAG_LLAMACPP_MODEL) with llama-server on 127.0.0.1:"
        "GRAPHRAG_LLAMA_SERVER_PORT, GRAPHRAG_LLAMA_SERVER_SLOTS slots; does nothing when ours already runs so",
    )
    ps.add_argument("--wait", type=float, default=300, metavar="SECONDS", help="start-up timeout (default 300)")
    ps.set_defaults(func=run)

    pt = lsub.add_parser("stop", help="stop the llama-server started by `llm start` (or left by a killed command)")
    pt.set_defaults(func=run)

    pu = lsub.add_parser("status", help="does our llama-server answer? port, pid, model, slots, log; exit code 0 "
                                        "yes, 3 no")
    pu.set_defaults(func=run)
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from graphrag_got.commands.render import progress_bar
    from graphrag_got.llm import server as srv

    cmd = getattr(args, "llm_command", None)
    if cmd == "start":
        with progress_bar() as progress:
            info = srv.ensure_running(settings.llm, wait_s=args.wait, files=settings.files, progress=progress)
        if not info.started:
            print(f"llama-server already answers at {info.url} (pid {info.pid}, {info.plan.describe()}); nothing to do")
            return 0
        srv.keep_running(info.pid)  # `llm start` leaves it running for the commands that follow
        print(f"llama-server started at {info.url}")
        print(f"  pid {info.pid}, ready in {info.startup_s:.1f} s")
        print(f"  model {info.plan.model}")
        print(f"  {info.plan.slots} parallel slot(s) x {info.plan.ctx_per_slot} tokens of context, "
              f"{info.plan.threads} thread(s)")
        print(f"  program {info.plan.binary}")
        print(f"  log {info.log}")
        print("  stop it with `graphrag-got llm stop`")
        return 0
    if cmd == "stop":
        pid = srv.stop(settings.files)
        if pid is None:
            print(f"the embedded llama-server (home {srv.server_home(settings.files)}) is not running")
        else:
            print(f"llama-server stopped (pid {pid})")
        return 0
    if cmd == "status":
        st = srv.status(settings.llm, files=settings.files)
        try:
            runs = srv.choose_backend(settings.llm).describe()
        except LLMServerError as exc:
            runs = str(exc)
        print(f"{st.url}: " + ("answering" if st.answering else st.health))
        if st.answering:
            busy = f", {st.slots_busy} busy now" if st.slots_busy is not None else ""
            print(f"  model {st.model or '?'}; {st.slots or '?'} slot(s) x {st.ctx_per_slot or '?'} tokens{busy}")
        if st.pid is not None:
            plan = f"; {st.plan.describe()}" if st.plan else ""
            print(f"  our server: running, pid {st.pid}{plan}; log {st.log}")
        else:
            print(f"  our server: not running (home {srv.server_home(settings.files)})")
        print(f"  the embedded model runs: {runs}")
        return 0 if st.answering else 3
    raise LLMServerError("choose an llm subcommand: start, stop or status")
