"""Record the calls a test suite really makes between functions of one source tree.

    python benchmarks/code/calltrace.py ROOT OUT.json [pytest arguments...]

Runs ``pytest.main(arguments)`` in this interpreter with a profile hook (``sys.setprofile`` and
``threading.setprofile``) and writes every distinct (caller, callee) pair whose code lives under ROOT
as ``[caller_path, caller_first_line, caller_name, callee_path, callee_first_line, callee_name]``
(paths relative to ROOT, first lines as ``co_firstlineno``: the first decorator's line). The caller is
the nearest frame under ROOT, so a call made through the standard library (``contextlib``,
``functools``) links the two functions of the tree it joins; a function pytest itself calls (a test,
a fixture) has no caller. Used by :mod:`benchmarks.code.bound`; run apart from the coverage run so the
ground truth is not measured under this hook. Standalone on purpose (no import of this project): it
runs inside the analysed package's test environment.
"""

from __future__ import annotations

import json
import os
import sys
import threading


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    root, out = os.path.realpath(argv[0]) + os.sep, argv[1]
    inside: dict[str, str | None] = {}  # co_filename -> path under root, or None
    edges: set[tuple[object, object]] = set()

    def rel(filename: str) -> str | None:
        got = inside.get(filename, "")
        if got == "":
            # "<frozen importlib._bootstrap>", "<template>", "<string>": no file, never under root
            real = os.path.realpath(filename) if os.path.isabs(filename) else ""
            got = inside[filename] = real[len(root):].replace(os.sep, "/") if real.startswith(root) else None
        return got

    def hook(frame, event, arg):  # noqa: ANN001 - the profile hook's signature
        if event != "call" or rel(frame.f_code.co_filename) is None:
            return
        back = frame.f_back
        while back is not None and rel(back.f_code.co_filename) is None:
            back = back.f_back
        if back is not None:
            edges.add((back.f_code, frame.f_code))

    import pytest

    sys.setprofile(hook)
    threading.setprofile(hook)
    try:
        code = pytest.main(argv[2:])
    finally:
        sys.setprofile(None)
        threading.setprofile(None)

    def key(c) -> list[object]:  # noqa: ANN001 - a code object
        return [rel(c.co_filename), c.co_firstlineno, c.co_name]

    rows = sorted({tuple(key(a) + key(b)) for a, b in edges})
    with open(out, "w", encoding="utf-8") as fh:
        json.dump({"root": root, "pytest_exit_code": int(code), "edges": rows}, fh)
    print(f"calltrace: {len(rows)} distinct calls between functions under {root} -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
