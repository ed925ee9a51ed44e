"""`graphrag-got prompts export DIR | list`: the prompts sent to the model, as files a user edits."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - imported when the command runs, not when the parser is built
    from graphrag_got.config import Settings


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("prompts", help="the prompts sent to the model: list them, or export them as files to edit "
                                       "(GRAPHRAG_PROMPTS_DIR)")
    psub = p.add_subparsers(dest="prompts_command", metavar="{export,list}", required=True)
    pe = psub.add_parser("export", help="write every prompt in use as DIR/<name>.txt, with a README.md on the format, "
                                        "to start from (GRAPHRAG_PROMPTS_DIR=DIR then uses them)")
    pe.add_argument("directory", metavar="DIR", help="the folder to write (created if missing)")
    pe.add_argument("--force", action="store_true", help="overwrite prompt files already in DIR")
    pe.set_defaults(func=run)
    pl = psub.add_parser("list", help="every prompt: its file name, version, placeholders, built-in or custom")
    pl.set_defaults(func=run)
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from graphrag_got.common.prompt_files import export_prompt_set, readme_text
    from graphrag_got.prompts import load_prompts

    prompts = load_prompts(settings.llm.prompts_dir)
    if args.prompts_command == "export":
        written = export_prompt_set(prompts, args.directory, force=args.force, readme=readme_text(prompts))
        custom = [n for n in prompts.templates if prompts[n].custom]
        print(f"wrote {len(written) - 1} prompt files and README.md to {args.directory}"
              + (f" ({len(custom)} custom, from {prompts.directory}: {', '.join(custom)})" if custom else
                 " (the built-in prompts)"))
        print(f"edit them, then set GRAPHRAG_PROMPTS_DIR={args.directory} (delete the files you leave unchanged, so "
              "they follow the built-in prompts)")
        return 0
    where = f"GRAPHRAG_PROMPTS_DIR={prompts.directory}" if prompts.directory else "GRAPHRAG_PROMPTS_DIR unset"
    print(f"prompts ({where}; placeholders marked * are required):")
    for name, template in prompts.templates.items():
        prompt = prompts[name]
        marks = " ".join(f"${{{p}}}" + ("*" if p in template.required else "") for p in template.placeholders)
        state = f"custom sha256:{prompt.digest[:8]} ({prompt.source})" if prompt.custom else "built-in"
        print(f"  {name:<21} {template.version:<17} {state:<9} {marks or 'no placeholder'}")
    return 0


def print_prompt_lines(settings: Settings, names: tuple[str, ...]) -> None:
    """What a command that sends ``names`` prints first when GRAPHRAG_PROMPTS_DIR is set: one line per
    prompt, built-in (its version) or custom (its digest and file). Nothing when it is not set."""
    if settings.llm.prompts_dir is None:
        return
    from graphrag_got.prompts import load_prompts

    for line in load_prompts(settings.llm.prompts_dir).lines(names):
        print(line, flush=True)
