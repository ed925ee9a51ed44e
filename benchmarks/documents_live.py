"""A PDF built and asked about with the embedded model: do the answer's citations name the page that holds them?

    NEO4J_URI=bolt://127.0.0.1:7713 GRAPHRAG_HOME=/tmp/docs-live .venv/bin/graphrag-got neo4j start
    NEO4J_URI=bolt://127.0.0.1:7713 .venv/bin/python -m benchmarks.documents_live --out benchmarks/results/documents_live.txt

The PDF is made here (reportlab, as :mod:`benchmarks.documents` makes its files) from the first
``--paragraphs`` paragraphs of ``corpus/got.txt``, in their order, with a running header and a page
number on every page. It is built with the embedded model (``generate`` strategy, no communities) into an
emptied database, and each question of ``QUESTIONS`` is asked in local search with the answer written.

Printed per question: the answer, then every source it cites with its place (``got.pdf p. 2``) and
whether that page of the PDF (read again with pypdf, white space collapsed) holds the cited text: the
evidence sentence of a fact, the excerpt of a chunk. A citation without a page is counted as a miss.
The database is emptied first: point NEO4J_URI at a scratch server.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.documents import Source, make_pdf, paragraphs  # noqa: E402
from benchmarks.load_benchmark import clear  # noqa: E402
from graphrag_got.common.files import write_text_atomic  # noqa: E402
from graphrag_got.config import Settings  # noqa: E402

GOT = ROOT / "corpus" / "got.txt"
ONTOLOGY = ROOT / "ontology" / "got.json"
QUESTIONS = ["¿A qué casa pertenece Jon Snow?", "¿Quién es el padre de Daenerys Targaryen?"]


def _flat(text: str) -> str:
    return " ".join(text.split()).casefold()


def page_texts(data: bytes) -> list[str]:
    from pypdf import PdfReader

    return [_flat(p.extract_text() or "") for p in PdfReader(io.BytesIO(data)).pages]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--paragraphs", type=int, default=12, help="paragraphs of corpus/got.txt in the PDF")
    ap.add_argument("--out", type=Path, help="also write the report to this file")
    args = ap.parse_args(argv)
    from graphrag_got.llm.server import scope

    with scope():  # the llama-server the build and the answers start is stopped at the end
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from graphrag_got.graph.db import connect
    from graphrag_got.pipeline.build import run_build
    from graphrag_got.search.local import local_search

    lines: list[str] = []

    def say(line: str = "") -> None:
        print(line, flush=True)
        lines.append(line)

    source = Source("got.pdf", [("p", p) for p in paragraphs(GOT)[:args.paragraphs]])
    data = make_pdf(source, "Crónica de prueba", 1)
    pages = page_texts(data)
    say(f"PDF: the first {args.paragraphs} paragraphs of corpus/got.txt, {len(pages)} pages, made with reportlab; "
        f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="docs-live-") as tmp:
        work = Path(tmp)
        (work / "corpus").mkdir()
        (work / "corpus" / "got.pdf").write_bytes(data)
        base = Settings.load()
        settings = base.with_overrides(home=work / "home", out_dir=work / "out", ontology_path=ONTOLOGY,
                                       corpus_path=work / "corpus", llm_provider="llamacpp", extraction="generate",
                                       models_path=base.models_dir.resolve())
        driver = connect(settings.neo4j)
        clear(driver, settings.neo4j.database)
        t0 = time.monotonic()
        res = run_build(settings, work / "corpus", communities=False, say=lambda line: say("  " + line))
        say(f"build: {time.monotonic() - t0:.0f} s, LLM calls {res.total_llm_calls}")
        cited = right = 0
        for question in QUESTIONS:
            t0 = time.monotonic()
            ans = local_search(driver, settings.neo4j, question, answer=True, search=settings.search, llm=settings.llm,
                               files=settings.files, embedding=settings.embedding)
            say(f"\nQ: {question} ({time.monotonic() - t0:.0f} s)\nA: {ans.answer}")
            for c in ans.citations:
                where = c.where()
                text = c.evidence or c.text
                page = int(c.location.split()[1]) if c.location and c.location.startswith("p. ") else None
                holds = page is not None and 0 < page <= len(pages) and _flat(text)[:120] in pages[page - 1]
                cited += 1
                right += holds
                say(f"  [{c.id}] {where or '(no place)'}: {'the page holds it' if holds else 'NOT ON THAT PAGE'} "
                    f"· {text[:160]}")
        driver.close()
    say(f"\ncitations naming the page that holds the cited text: {right}/{cited}")
    if args.out:
        write_text_atomic(args.out, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
