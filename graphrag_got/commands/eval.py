"""`graphrag-got eval [--compare SETTING=VALUE ...]`: the extraction scored on your corrected passages.

Each stored passage is extracted while it is not among the examples (leave-one-out) and scored against
its correction: entities and relations, precision/recall/F1, exact and tolerant, per relation.
``--compare`` scores a second configuration (another model, provider, answer form, strategy: settings
given as ``NAME=VALUE``, by environment variable or flat name) on the same passages, side by side.
The model calls each configuration will make are said before they are made; answers already stored
are reused.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphrag_got.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover - imported when the command runs, not when the parser is built
    from graphrag_got.config import Settings
    from graphrag_got.teach.evaluate import EvalResult


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("eval", help="score the extraction on your corrected passages (leave-one-out)",
                       description=__doc__.split("\n\n")[1] if __doc__ else None)
    p.add_argument("--compare", action="append", metavar="SETTING=VALUE", default=[],
                   help="a second configuration: settings that differ (repeat, or separate with commas), e.g. "
                        "GRAPHRAG_ANSWER_FORM=lines or llamacpp_model=qwen2.5-coder-0.5b")
    p.add_argument("--dry-run", action="store_true", help="only say how many passages and model calls")
    p.add_argument("--json", metavar="FILE", help="also write the scores as JSON to FILE")
    p.set_defaults(func=run)


def _overrides(items: list[str]) -> dict[str, Any]:
    from graphrag_got.config import env_map

    by_env = {env.upper(): flat for flat, env in env_map().items()}
    flat_names = set(env_map())
    out: dict[str, Any] = {}
    for item in (part.strip() for given in items for part in given.split(",")):
        if not item:
            continue
        name, eq, value = item.partition("=")
        name = name.strip()
        if not eq or not name:
            raise ConfigError(f"--compare {item!r}: write SETTING=VALUE, e.g. GRAPHRAG_ANSWER_FORM=lines")
        flat = name if name in flat_names else by_env.get(name.upper())
        if flat is None:
            raise ConfigError(f"--compare {item!r}: {name!r} is not a setting (see docs/reference/settings.md; an "
                              "environment variable such as GRAPHRAG_ANSWER_FORM or its flat name answer_form)")
        out[flat] = value.strip()
    return out


def _row(label: str, values: list[str]) -> str:
    return "| " + " | ".join([label, *values]) + " |"


def side_by_side(results: list["EvalResult"]) -> str:
    """A Markdown table: one column per configuration, one row per score."""
    def f(x: float) -> str:
        return f"{x:.2f}"

    lines = [_row("", [r.label for r in results]), "|" + "---|" * (len(results) + 1),
             _row("model", [r.model for r in results]), _row("model calls made", [str(r.calls) for r in results])]
    for mode in ("exact", "tolerant"):
        for kind in ("entities", "relations"):
            prfs = [getattr(getattr(r.total, mode), kind) for r in results]
            lines.append(_row(f"{kind} P / R / F1 ({mode})",
                              [f"{f(p.precision)} / {f(p.recall)} / {f(p.f1)}  ({p.correct} of {p.predicted}, "
                               f"{p.found} of {p.gold})" for p in prfs]))
    names = list(dict.fromkeys(n for r in results for n in r.total.tolerant.by_relation))
    for name in names:
        cells = []
        for r in results:
            prf = r.total.tolerant.by_relation.get(name)
            cells.append("-" if prf is None or not (prf.gold or prf.predicted)
                         else f"{f(prf.f1)}  ({prf.found} of {prf.gold} found, {prf.correct} of {prf.predicted} right)")
        if any(c != "-" for c in cells):
            lines.append(_row(f"{name} F1 (tolerant)", cells))
    return "\n".join(lines)


def run(args: argparse.Namespace, settings: "Settings") -> int:
    from graphrag_got.teach.evaluate import evaluate, plan

    configs = [("A (current)" if args.compare else "current", settings)]
    if args.compare:
        configs.append(("B (" + ", ".join(args.compare) + ")", settings.with_overrides(**_overrides(args.compare))))
    folder = settings.files.out_dir / "eval"
    for label, conf in configs:
        p = plan(conf, folder)
        print(f"{label}: {p.passages} corrected passage(s) ({p.chunks} chunk(s)), each scored without its own "
              f"correction; {p.calls} extraction call(s) to make, {p.chunks - p.to_ask} answer(s) already stored",
              flush=True)
    if args.dry_run:
        return 0
    results = []
    for i, (label, conf) in enumerate(configs):
        results.append(evaluate(conf, folder, label="AB"[i] if args.compare else "current",
                                progress=lambda line: print(f"  {line}", flush=True)))
        results[-1] = results[-1].model_copy(update={"label": label})
    print()
    print(side_by_side(results))
    if args.json:
        data = {"results": [{"label": r.label, "model": r.model, "calls": r.calls, **r.total.to_dict(),
                             "passages": [{"example_id": p.example_id, "chunk_id": p.chunk_id, "calls": p.calls,
                                           "extraction": p.extraction, **p.score.to_dict()} for p in r.passages]}
                            for r in results]}
        Path(args.json).write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        print(f"\nwrote {args.json}")
    return 0
