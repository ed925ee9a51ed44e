"""Document readers: how much of a known text comes back out of a PDF, DOCX and HTML file, and how fast.

    python -m benchmarks.documents [--parts 60] [--real DIR ...] [--out benchmarks/results/documents.txt]

The files are made here from text we know: the GoT corpus (``corpus/got.txt``) and the observatory
corpus (``benchmarks/quality/data/observatory/corpus``), each repeated in numbered parts whose
paragraph order is shuffled (fixed seed), so no two pages are alike. Three PDFs (reportlab), every
page with a running header and a page number:

- ``book.pdf``: one column;
- ``two-column.pdf``: two columns a page, a paragraph flowing from one column into the next;
- ``tables.pdf``: a three-column table after every third paragraph;

and the same GoT parts as a DOCX (python-docx, a heading per part) and an HTML page.

Printed per file and reader: pages, seconds, pages a second (characters a second for DOCX and HTML),
running header and footer lines dropped, and the similarity of the text read to the source text,
both with white space collapsed (rapidfuzz's normalized Indel similarity: 1.0 is identical, character
level). The PDF reader used (pypdf) is compared with pdfminer.six on the same PDFs, with the same
header/footer rule applied to pdfminer's pages. Targets (issue 51): similarity >= 0.98, >= 50 PDF
pages a second on this 2-core machine.

``--real DIR`` also reads every PDF, DOCX and HTML file under DIR (files nobody here wrote, e.g. the
test files shipped inside the sdists of pypdf and python-docx: ``pip download --no-binary :all:
--no-deps pypdf==6.21.4 python-docx==1.2.0``, then unpack) and tells how many were read, how many
skipped and why, with pages a second. Those files are not kept in this repository.

The load average, how busy the whole machine was and the busiest other processes are printed: the
speeds mean little on a machine busy with other work.
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.cli_startup import cpu_times  # noqa: E402
from graphrag_got.errors import CorpusError  # noqa: E402
from graphrag_got.ingest.readers import read_document  # noqa: E402
from graphrag_got.ingest.readers.repeated import drop_repeated  # noqa: E402

GOT = ROOT / "corpus" / "got.txt"
OBSERVATORY = ROOT / "benchmarks" / "quality" / "data" / "observatory" / "corpus"
TABLE_ROWS = [("Character", "House", "Seat"), ("Eddard Stark", "Stark", "Winterfell"),
              ("Cersei Lannister", "Lannister", "Casterly Rock"), ("Daenerys Targaryen", "Targaryen", "Dragonstone"),
              ("Olenna Tyrell", "Tyrell", "Highgarden")]


def paragraphs(*paths: Path) -> list[str]:
    out: list[str] = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        out += [" ".join(p.split()) for p in text.split("\n\n") if p.strip()]
    return out


@dataclass
class Source:
    """A document to make: (kind, text) blocks, kind ``h`` (heading), ``p`` or ``t`` (table)."""

    name: str
    blocks: list[tuple[str, object]]

    def text(self) -> str:
        """The source text in reading order, white space collapsed (a table: its cells row by row)."""
        parts: list[str] = []
        for kind, value in self.blocks:
            if kind == "t":
                parts += [" ".join(row) for row in value]  # type: ignore[union-attr]
            else:
                parts.append(str(value))
        return " ".join(" ".join(parts).split())


def sources(parts: int) -> dict[str, Source]:
    rng = random.Random(51)
    got, obs = paragraphs(GOT), paragraphs(*sorted(OBSERVATORY.glob("*.txt")))

    def shuffled(items: list[str], title: str, count: int) -> list[tuple[str, object]]:
        blocks: list[tuple[str, object]] = []
        for part in range(1, count + 1):
            order = items[:]
            rng.shuffle(order)
            blocks.append(("h", f"{title} {part}"))
            blocks += [("p", p) for p in order]
        return blocks

    book = shuffled(got, "Part", parts)
    tables: list[tuple[str, object]] = []
    for i, block in enumerate(shuffled(got, "Chapter", max(1, parts // 4))):
        tables.append(block)
        if block[0] == "p" and i % 3 == 0:
            tables.append(("t", TABLE_ROWS))
    return {"book.pdf": Source("book.pdf", book),
            "two-column.pdf": Source("two-column.pdf", shuffled(obs, "Report", parts * 2)),
            "tables.pdf": Source("tables.pdf", tables),
            "book.docx": Source("book.docx", book), "book.html": Source("book.html", book)}


# ---------------------------------------------------------------------------------------------- making files


def make_pdf(source: Source, header: str, columns: int) -> bytes:
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import BaseDocTemplate, Frame, PageTemplate, Paragraph, Table, TableStyle

    styles = getSampleStyleSheet()
    width, height = A4
    margin, gap = 56, 18
    col = (width - 2 * margin - gap * (columns - 1)) / columns
    frames = [Frame(margin + i * (col + gap), margin, col, height - 2 * margin, id=f"c{i}") for i in range(columns)]

    def furniture(canvas, doc) -> None:  # type: ignore[no-untyped-def]
        canvas.setFont("Helvetica", 8)
        canvas.drawString(margin, height - 36, header)
        canvas.drawCentredString(width / 2, 30, f"Page {doc.page}")

    out = io.BytesIO()
    doc = BaseDocTemplate(out, pagesize=A4, pageTemplates=[PageTemplate("page", frames, onPage=furniture)])
    story = []
    for kind, value in source.blocks:
        if kind == "h":
            story.append(Paragraph(str(value), styles["Heading2"]))
        elif kind == "p":
            story.append(Paragraph(str(value), styles["BodyText"]))
        else:
            table = Table(value)
            table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.grey)]))
            story.append(table)
    doc.build(story)
    return out.getvalue()


def make_docx(source: Source) -> bytes:
    import docx

    d = docx.Document()
    for kind, value in source.blocks:
        if kind == "h":
            d.add_heading(str(value), 1)
        else:
            d.add_paragraph(str(value))
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


def make_html(source: Source) -> bytes:
    from html import escape

    body = "".join(f"<h2>{escape(str(v))}</h2>" if k == "h" else f"<p>{escape(str(v))}</p>" for k, v in source.blocks)
    return (f"<!DOCTYPE html><html><head><title>Book</title><style>p {{margin: 0}}</style></head><body>"
            f"<nav>Home | Contents</nav>{body}</body></html>").encode("utf-8")


# ---------------------------------------------------------------------------------------------- measuring


def similarity(source: str, read: str) -> float:
    from rapidfuzz.distance import Indel

    return Indel.normalized_similarity(source, " ".join(read.split()))


def pdfminer_text(data: bytes) -> tuple[str, int, int]:
    """(text, pages, lines dropped) of pdfminer.six (its plain-text output, a form feed after each page), with
    the same header/footer rule as our reader."""
    from pdfminer.high_level import extract_text

    pages = extract_text(io.BytesIO(data)).split("\f")
    if pages and not pages[-1].strip():
        pages.pop()  # the form feed after the last page
    kept, dropped = drop_repeated([page.split("\n") for page in pages])
    return "\n".join("\n".join(p) for p in kept), len(pages), dropped


@dataclass
class Row:
    file: str
    reader: str
    pages: int | None
    seconds: float
    dropped: int
    similarity: float
    chars: int

    def line(self) -> str:
        speed = (f"{self.pages / self.seconds:7.1f} pages/s" if self.pages
                 else f"{self.chars / self.seconds / 1000:7.0f} kchar/s")
        return (f"{self.file:16} {self.reader:11} {self.pages or '-':>5} {self.seconds:7.2f}s {speed}  "
                f"headers/footers dropped {self.dropped:4}  similarity {self.similarity:.4f}")


def measure(folder: Path, parts: int) -> list[Row]:
    rows: list[Row] = []
    made = sources(parts)
    files = {"book.pdf": make_pdf(made["book.pdf"], "A Song of Test Data - Benchmark Edition", 1),
             "two-column.pdf": make_pdf(made["two-column.pdf"], "Halde Observatory Annual Report", 2),
             "tables.pdf": make_pdf(made["tables.pdf"], "Houses and Seats - A Tabular Companion", 1),
             "book.docx": make_docx(made["book.docx"]), "book.html": make_html(made["book.html"])}
    for module in ("bs4", "docx", "pdfminer.high_level", "pypdf"):  # imported before the clocks start
        importlib.import_module(module)

    for name, data in files.items():
        path = folder / name
        path.write_bytes(data)
        source = made[name].text()
        t0 = time.perf_counter()
        read = read_document(path, name)
        seconds = time.perf_counter() - t0
        rows.append(Row(name, read.format, read.pages, seconds, read.lines_dropped, similarity(source, read.text),
                        len(read.text)))
        if name.endswith(".pdf"):
            t0 = time.perf_counter()
            text, pages, dropped = pdfminer_text(data)
            seconds = time.perf_counter() - t0
            rows.append(Row(name, "pdfminer", pages, seconds, dropped, similarity(source, text), len(text)))
    return rows


def docx_runs(data: bytes) -> str:
    """The text of every ``<w:t>`` run of a DOCX's main part, in order: what Word stores, as the ground truth
    a real DOCX has (headers, footers and notes are other parts, which the reader does not read either)."""
    import re
    import zipfile
    from html import unescape

    xml = zipfile.ZipFile(io.BytesIO(data)).read("word/document.xml").decode("utf-8")
    return "".join(unescape(m) for m in re.findall(r"<w:t(?:\s[^>]*)?>([^<]*)</w:t>", xml))


def _agreement(data: bytes, text: str) -> float:
    """Similarity of ``text`` to pdfminer.six's text of the same PDF, white space ignored; -1 when pdfminer fails."""
    from rapidfuzz.distance import Indel

    try:
        other, _, _ = pdfminer_text(data)
    except Exception:  # noqa: BLE001 - the other reader failing is counted, not a crash of the benchmark
        return -1.0
    return Indel.normalized_similarity(_bare(other), _bare(text))


def _bare(text: str) -> str:
    return "".join(text.split()).replace("|", "")


def real_files(folder: Path) -> list[str]:
    wanted = (".pdf", ".docx", ".html", ".htm")
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in wanted)
    read: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    example: dict[str, str] = {}
    pages = 0
    ours = 0.0
    fidelity: list[float] = []
    agreement: list[float] = []
    for path in files:
        start = time.perf_counter()
        try:
            doc = read_document(path, path.name, max_bytes=50_000_000)
        except CorpusError as exc:
            reason = exc.reason or "error"
            skipped[reason] += 1
            example.setdefault(reason, str(exc)[:220])
            continue
        except Exception as exc:  # noqa: BLE001 - a crash is what this measures; it must not happen
            skipped[f"CRASH {type(exc).__name__}"] += 1
            example.setdefault(f"CRASH {type(exc).__name__}", f"{path.name}: {exc}"[:150])
            continue
        read[doc.format] += 1
        pages += doc.pages or 0
        ours += time.perf_counter() - start
        if doc.format == "docx":
            from rapidfuzz.distance import Indel

            fidelity.append(Indel.normalized_similarity(_bare(docx_runs(path.read_bytes())), _bare(doc.text)))
        if doc.format == "pdf":
            agreement.append(_agreement(path.read_bytes(), doc.text))
    out = [f"{folder.name}: {len(files)} files, read {sum(read.values())} "
           f"({', '.join(f'{k} {v}' for k, v in sorted(read.items()))}), skipped {sum(skipped.values())}; "
           f"{pages} PDF pages, {ours:.1f}s reading"
           + (f" ({pages / ours:.0f} pages/s)" if pages and ours else "")]
    out += [f"  skipped {reason}: {n}, e.g. {example[reason]}" for reason, n in sorted(skipped.items())]
    known = [a for a in agreement if a >= 0]
    if agreement:
        out.append(f"  PDF text of our reader against pdfminer.six's (no source text to compare with: how much two "
                   f"readers agree, white space ignored): mean {sum(known) / max(1, len(known)):.4f}, lowest "
                   f"{min(known, default=float('nan')):.4f}, over {len(known)} files "
                   f"({len(agreement) - len(known)} pdfminer could not read)")
    if fidelity:
        out.append(f"  DOCX text against the file's own text runs (white space and table bars ignored): mean "
                   f"similarity {sum(fidelity) / len(fidelity):.4f}, lowest {min(fidelity):.4f}, over {len(fidelity)} files")
    return out


def beside() -> list[str]:
    """The busiest processes on the machine other than this one, by CPU share."""
    try:
        ps = subprocess.run(["ps", "-eo", "pid,pcpu,comm", "--sort=-pcpu"], capture_output=True, text=True,
                            timeout=10).stdout.splitlines()[1:]
    except (OSError, subprocess.SubprocessError):
        return []
    rows = [line.split(None, 2) for line in ps]
    return [f"{comm} {cpu}%" for pid, cpu, comm in rows[:6] if int(pid) != os.getpid() and float(cpu) >= 1.0][:4]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--parts", type=int, default=80, help="parts of each made document (80: ~340 PDF pages)")
    ap.add_argument("--real", type=Path, action="append", default=[], help="a folder of real files to read too")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "documents.txt")
    args = ap.parse_args(argv)
    load0, (busy0, total0) = os.getloadavg(), cpu_times()
    others = beside()
    with tempfile.TemporaryDirectory() as tmp:
        rows = measure(Path(tmp), args.parts)
    real = [line for folder in args.real for line in real_files(folder)]
    load1, (busy1, total1) = os.getloadavg(), cpu_times()
    busy = (busy1 - busy0) / (total1 - total0) if total1 > total0 else float("nan")
    ours = [r for r in rows if r.reader == "pdf"]
    pages = sum(r.pages or 0 for r in ours)
    lines = [f"documents benchmark, {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, {os.cpu_count()} cores",
             "file             reader      pages   time     speed            dropped            similarity",
             *[r.line() for r in rows],
             f"PDF reader (pypdf) over the {pages} made pages: {pages / sum(r.seconds for r in ours):.1f} pages/s "
             f"(target >= 50), lowest similarity {min(r.similarity for r in ours):.4f} (target >= 0.98), "
             f"{sum(r.dropped for r in ours)} header/footer lines dropped",
             *real,
             f"machine: load average {load0[0]:.2f} before, {load1[0]:.2f} after; {busy:.0%} busy while it ran; "
             f"busiest other processes at the start: {', '.join(others) or 'none over 1%'}"]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
