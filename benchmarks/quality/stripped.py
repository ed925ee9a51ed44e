"""An ontology as a user first writes it: without annotated examples and without relation cues.

``strip_ontology`` removes the fields a user adds only after tuning on their corpus: the annotated
examples (``ejemplos`` / ``examples``), which go into the generative prompt, and the cues
(``indicios`` / ``cues``, ``indicios_inversos`` / ``reverse_cues``), which the validator checks.
Classes, relations, comments, properties and attributes stay as written. The quality ladder runs
every corpus with its ontology as given and stripped, and ``benchmarks.extract_speed --stripped``
measures both strategies on the stripped GoT ontology.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

EXAMPLE_KEYS = frozenset({"ejemplos", "examples"})
CUE_KEYS = frozenset({"indicios", "cues", "indicios_inversos", "reverse_cues"})


def strip_ontology(raw: dict[str, Any]) -> dict[str, Any]:
    """A copy of an ontology file's data without examples and cues (the input is not changed)."""
    out = {k: v for k, v in raw.items() if k not in EXAMPLE_KEYS}
    for key in ("relaciones", "relations"):
        rels = out.get(key)
        if isinstance(rels, list):
            out[key] = [{k: v for k, v in r.items() if k not in CUE_KEYS} if isinstance(r, dict) else r for r in rels]
    return out


def write_stripped(path: Path, out_dir: Path) -> Path:
    """Write the stripped copy of the ontology file ``path`` into ``out_dir`` (same file name), return it."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    raw.pop("$schema", None)  # the copy lives elsewhere: a relative schema reference would not resolve
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{Path(path).stem}-stripped.json"
    target.write_text(json.dumps(strip_ontology(raw), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return target


if __name__ == "__main__":  # python -m benchmarks.quality.stripped ONTOLOGY OUT_DIR
    import sys

    if len(sys.argv) != 3:
        sys.exit("usage: python -m benchmarks.quality.stripped ONTOLOGY.json OUT_DIR")
    print(write_stripped(Path(sys.argv[1]), Path(sys.argv[2])))
