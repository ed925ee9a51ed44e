"""Markdown tables: the one rendering of the quality benchmark, for the terminal and the results files."""

from __future__ import annotations

from collections.abc import Sequence


def fmt_ratio(value: float) -> str:
    return f"{value:.2f}"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str | None = None) -> str:
    """A GitHub-flavoured Markdown table with columns padded so it also reads well as plain text.

    ``align`` has one letter per column: ``l`` (left) or ``r`` (right); default all left.
    """
    align = align or "l" * len(header)
    if len(align) != len(header) or any(len(r) != len(header) for r in rows):
        raise ValueError("every row and the alignment need one entry per header column")
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    widths = [max(w, 3) for w in widths]

    def line(cells: Sequence[str]) -> str:
        padded = [str(c).rjust(w) if a == "r" else str(c).ljust(w) for c, w, a in zip(cells, widths, align)]
        return "| " + " | ".join(padded) + " |"

    rule = "| " + " | ".join(("-" * (w - 1) + ":") if a == "r" else "-" * w for w, a in zip(widths, align)) + " |"
    return "\n".join([line(header), rule, *(line(r) for r in rows)])


def print_report(text: str, out: str | None) -> None:
    """Print a benchmark's report and, when ``out`` is given, write it there too."""
    print("\n" + text)
    if out:
        from pathlib import Path

        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text, encoding="utf-8")
