"""Walking an input folder (a corpus, a notes vault, a code tree) without leaving it.

A folder the user names is the boundary of what is read. Every entry is judged by where it really
is (its real path, links resolved), not by where it appears: a link inside the folder that points
outside it (``passwd.md -> /etc/passwd``, ``notes/x.md -> ../secret/secret.md``, a linked folder)
is refused with a :class:`SkippedInput` record and a logged warning, unless the caller allows
outside links (setting ``follow_outside_links``). A link to a folder already walked, a link cycle,
a broken link and an entry that is not a regular file (a FIFO would block the read forever) are
refused the same way. Hidden names (``.git``, ``.obsidian``) are never walked, as before: they are
not inputs, so no record is made for them.

The walk is iterative and visits each real folder at most once, so link cycles cannot loop.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath

logger = logging.getLogger(__name__)

#: Reason codes of a skipped input (also written to extraction.json and the report).
OUTSIDE_ROOT = "outside_root"
BROKEN_LINK = "broken_link"
LINKED_FOLDER_SEEN = "linked_folder_seen"
NOT_A_FILE = "not_a_regular_file"
UNREADABLE = "unreadable"
TOO_LARGE = "too_large"  # over a size cap (a corpus document, a code file)


@dataclass(frozen=True)
class SkippedInput:
    """One input file (or folder) that was not read, and why: ``reason`` is a code, ``message`` the
    sentence a user reads."""

    path: str  # as found in the walked folder (relative to it, POSIX)
    reason: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def is_inside(path: Path, root: Path) -> bool:
    """Whether the real path of ``path`` is ``root`` (already resolved) or under it."""
    try:
        return path.resolve(strict=True).is_relative_to(root)
    except (OSError, RuntimeError):  # missing, a link loop
        return False


def walk_files(root: Path, *, wanted: Callable[[str], bool], prune: Callable[[str], bool],
               follow_outside_links: bool = False,
               skipped: list[SkippedInput] | None = None) -> list[tuple[str, Path]]:
    """``(relative POSIX id, path)`` of the files under folder ``root`` whose name ``wanted`` accepts,
    sorted by id; folders whose name ``prune`` accepts are not entered.

    Entries outside ``root`` (by real path), broken links, repeated linked folders and non-regular
    files are appended to ``skipped`` (and logged as warnings) instead of being returned.
    """
    base = root.resolve()
    out: list[tuple[str, Path]] = []
    seen_dirs: set[Path] = {base}

    def skip(rel: PurePosixPath, reason: str, message: str) -> None:
        record = SkippedInput(rel.as_posix(), reason, message)
        logger.warning("%s: skipped: %s", (root / rel).as_posix(), message)
        if skipped is not None:
            skipped.append(record)

    # real folders first, then linked ones, so that a folder reached both ways is read under its
    # own name and the link is the one refused
    stack: list[tuple[Path, PurePosixPath, bool]] = [(root, PurePosixPath(), False)]
    linked: list[tuple[Path, PurePosixPath, bool]] = []
    while stack or linked:
        folder, rel_folder, via_link = stack.pop() if stack else linked.pop(0)
        if via_link:
            real_folder = folder.resolve()
            if real_folder in seen_dirs:
                skip(rel_folder, LINKED_FOLDER_SEEN, f"a link to the folder {real_folder}, which is read "
                                                     "already (or holds this link)")
                continue
            seen_dirs.add(real_folder)
        elif rel_folder.parts:
            seen_dirs.add(folder.resolve())
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            skip(rel_folder, UNREADABLE, f"cannot list the folder ({exc.strerror or exc})")
            continue
        subfolders: list[tuple[Path, PurePosixPath, bool]] = []
        for entry in entries:
            rel = rel_folder / entry.name
            path = Path(entry.path)
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=True)
            except OSError as exc:
                skip(rel, UNREADABLE, f"cannot read the entry ({exc.strerror or exc})")
                continue
            if is_dir and prune(entry.name):
                continue
            if not is_dir and not wanted(entry.name):
                continue
            if is_link:
                try:
                    real = path.resolve(strict=True)
                except (OSError, RuntimeError):
                    skip(rel, BROKEN_LINK, f"a link to {os.readlink(path)!r}, which does not exist (or loops)")
                    continue
                if not real.is_relative_to(base) and not follow_outside_links:
                    skip(rel, OUTSIDE_ROOT, f"a link to {real}, outside the folder {base}; only files inside "
                                            "the folder given are read (set GRAPHRAG_FOLLOW_OUTSIDE_LINKS=true "
                                            "to follow links that leave it)")
                    continue
            if is_dir:
                if is_link or via_link:
                    linked.append((path, rel, True))
                else:
                    subfolders.append((path, rel, False))
                continue
            try:
                mode = path.stat().st_mode
            except OSError as exc:
                skip(rel, UNREADABLE, f"cannot read the file ({exc.strerror or exc})")
                continue
            if not stat.S_ISREG(mode):
                skip(rel, NOT_A_FILE, "not a regular file (a pipe, socket or device); only files are read")
                continue
            out.append((rel.as_posix(), path))
        stack.extend(reversed(subfolders))
    return sorted(out)
