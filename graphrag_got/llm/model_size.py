"""How big a chat model is, read from its name (no network, no file read).

Model names carry their size by convention: ``qwen2.5-coder-1.5b``, ``llama3.2:3b``,
``Qwen2.5-7B-Instruct-Q4_K_M.gguf``, ``smollm2:360m``. :func:`parameters_billions` reads the
largest such number (a mixture such as ``8x7b`` gives none: it is no small model anyway).
"""

from __future__ import annotations

import re
from pathlib import Path

# a number with the unit b (billions) or m (millions), standing alone between separators
_SIZE = re.compile(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)([bBmM])(?![A-Za-z0-9])")


def parameters_billions(name: str | None) -> float | None:
    """Billions of parameters a model name states (``"llama3.2:3b"`` -> 3.0), or None."""
    if not name:
        return None
    stem = Path(str(name)).name
    sizes = [float(n) / (1000.0 if unit in "mM" else 1.0) for n, unit in _SIZE.findall(stem)]
    return max(sizes) if sizes else None
