"""Dotted module names of the files of an analysed tree, and where an outside module comes from."""

from __future__ import annotations

import sys
from collections import defaultdict


def module_name(path: str, package_dirs: set[str], root_name: str) -> tuple[str, bool]:
    """Dotted module of a file (POSIX path relative to the root) and whether it is a package.

    The module is named from the nearest folder up that is not a package (no ``__init__.py``), as
    Python and pytest's rootdir insertion name it: ``src/pkg/mod.py`` is ``pkg.mod`` when ``src`` has
    no ``__init__.py``; ``tests/test_x.py`` in a plain ``tests`` folder is ``test_x``. When the root
    itself is a package (``""`` in ``package_dirs``) its folder name ``root_name`` is the top package.
    """
    parts = path[:-3].split("/") if path.endswith(".py") else path.split("/")
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    dirs = path.split("/")[:-1]
    keep = 0  # how many trailing folders are packages
    while keep < len(dirs) and "/".join(dirs[: len(dirs) - keep]) in package_dirs:
        keep += 1
    prefix = [root_name] if keep == len(dirs) and "" in package_dirs and root_name else []
    name_parts = prefix + dirs[len(dirs) - keep:] + ([] if is_package else parts[-1:])
    return ".".join(name_parts), is_package


def unique_module_names(paths: list[str], root_name: str) -> dict[str, tuple[str, bool]]:
    """:func:`module_name` of each path, made unique: files that would share a module name (two
    ``conftest.py`` in plain folders) are named by their path instead (``a.b.conftest``)."""
    package_dirs = {p.rsplit("/", 1)[0] if "/" in p else "" for p in paths if p.rsplit("/", 1)[-1] == "__init__.py"}
    names = {p: module_name(p, package_dirs, root_name) for p in paths}
    count: dict[str, int] = defaultdict(int)
    for mod, _ in names.values():
        count[mod] += 1
    out: dict[str, tuple[str, bool]] = {}
    taken: set[str] = set()
    for p in sorted(paths):
        mod, pkg = names[p]
        if count[mod] > 1 or not mod:
            stem = p[:-3] if p.endswith(".py") else p
            mod = stem.replace("/", ".").removesuffix(".__init__") or root_name or "__root__"
        base, n = mod, 2
        while mod in taken:
            mod, n = f"{base}_{n}", n + 1
        taken.add(mod)
        out[p] = (mod, pkg)
    return out


def module_origin(module: str) -> str:
    top = module.split(".")[0]
    if not top:
        return "unresolved"
    return "stdlib" if top in sys.stdlib_module_names or top == "__future__" else "external"
