"""Git for the code graph: which files and lines a change touches, and the text of each side.

Everything goes through the ``git`` command itself (as a pre-commit hook or a CI job has it), run in
the analysed root, so the user's repository configuration applies. Hunks come from ``git diff -U0``,
parsed by ``unidiff``; file names from ``git diff --name-status -z`` (NUL-separated: exact even for a
name git would quote, a newline included), and blobs of a revision by their object ids (from ``git ls-tree
-z``, so no file name is ever written on a line of a request) from ``git cat-file``, none larger than a
size cap.

Nothing outside the analysed tree is opened: a file of the working tree is read only when it is a
regular file (``lstat``, then opened with ``O_NOFOLLOW``), up to the cap; a symbolic link (wherever it
points), a pipe or a device, and a link or submodule of a revision, are reported as such
(:class:`Unread`), never followed.

A change is named like ``git diff``: ``None`` (the working tree against HEAD, untracked files that git
does not ignore counted as added), ``REV`` (the working tree against REV), ``A..B`` (commit B against A),
``A...B`` (B against the merge base of A and B: what a pull request changes); ``staged=True`` compares
the index with HEAD (what a pre-commit hook is about to commit).
"""

from __future__ import annotations

import os
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from graphrag_got.errors import ConfigError, GraphragGotError

#: ``git diff`` flags every call uses: no colour, no external diff or text conversion, renames found.
_DIFF = ["-c", "core.quotePath=false", "diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M"]


#: git's file modes of a symbolic link and of a submodule (a commit of another repository): no file to read.
LINK_MODE, SUBMODULE_MODE = "120000", "160000"
#: The default cap on the bytes read of one side of one file (GRAPHRAG_CODE_MAX_FILE_BYTES's default).
MAX_FILE_BYTES = 2_000_000


class GitError(GraphragGotError):
    """git is missing, the folder is not in a repository, or a revision does not exist."""


@dataclass(frozen=True)
class Unread:
    """One side of a file that was not read on purpose (a link, a device, too large); ``note`` says why,
    in the words the user reads."""

    note: str


@dataclass(frozen=True)
class Entry:
    """A file of a revision's tree (or of the index): its git mode and object id."""

    mode: str
    oid: str


@dataclass
class FileChange:
    """One file of a change. Paths are relative to the analysed root (POSIX); ``old_path`` is None for an
    added file, ``new_path`` for a deleted one. ``hunks``: ``(old start, old count, new start, new
    count)`` as ``git diff -U0`` gives them (a count of 0: the hunk only adds, or only removes, lines
    after line ``start`` of that side)."""

    status: str  # added | deleted | modified | renamed
    old_path: str | None
    new_path: str | None
    hunks: list[tuple[int, int, int, int]] = field(default_factory=list)
    binary: bool = False

    @property
    def removed(self) -> list[int]:
        """Old-side lines replaced or deleted."""
        return [n for a, c, _, _ in self.hunks for n in range(a, a + c)]

    @property
    def added(self) -> list[int]:
        """New-side lines."""
        return [n for _, _, b, d in self.hunks for n in range(b, b + d)]

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""

    @property
    def is_python(self) -> bool:
        return any(p is not None and p.endswith(".py") for p in (self.old_path, self.new_path))


@dataclass
class Change:
    """What a change compares: ``old`` (a commit id) against ``new`` (a commit id, or None: the working
    tree, or ``":"``: the index), and its files."""

    label: str
    old: str
    new: str | None
    files: list[FileChange]


def git(root: Path, *args: str, stdin: bytes | None = None) -> bytes:
    """Run git in ``root``; its stdout (bytes). A failure is a GitError with git's own message."""
    try:
        proc = subprocess.run(["git", *args], cwd=root, input=stdin, capture_output=True, timeout=120)
    except FileNotFoundError:
        raise GitError("git is not installed (or not on PATH): --diff and --since read the change with git") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"git {' '.join(args[:3])} took more than 120 s in {root}") from None
    if proc.returncode:
        message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git {' '.join(args[:4])} failed in {root}: {message[-1] if message else proc.returncode}")
    return proc.stdout


def prefix(root: Path) -> str:
    """The analysed root's path inside its repository (``""`` at the top, else ``sub/dir/``)."""
    if not root.is_dir():
        raise ConfigError(f"{root}: not a folder; --diff and --since need the analysed root (a folder in a git "
                          "repository)")
    try:
        return git(root, "rev-parse", "--show-prefix").decode("utf-8").strip()
    except GitError as exc:
        raise GitError(f"{root} is not inside a git repository ({exc}); --diff and --since read changes with git")


def check_revision(spec: str) -> None:
    """Refuse a revision holding a control character (a NUL, a newline): no branch, tag or commit name
    has one (``git check-ref-format``), and a NUL cannot even be passed to git as an argument."""
    bad = next((c for c in spec if ord(c) < 32 or ord(c) == 127), None)
    if bad is not None:
        raise ConfigError(f"{spec[:100]!r} is not a revision: it holds the control character {bad!r}, which no "
                          "branch, tag or commit name has; give a commit, branch or tag (e.g. HEAD~1, main, "
                          "main...HEAD)")


def commit(root: Path, rev: str) -> str:
    """The commit id ``rev`` names (a GitError naming it when it names none)."""
    check_revision(rev)
    if not rev or rev.startswith("-"):
        raise ConfigError(f"{rev!r} is not a revision (give a commit, branch or tag, e.g. HEAD~1 or main)")
    try:
        return git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").decode().strip()
    except GitError:
        raise GitError(f"{rev!r} names no commit of the repository at {root}") from None


def resolve_spec(root: Path, spec: str | None, *, staged: bool = False) -> tuple[str, str | None, str]:
    """(old commit, new commit or None for the working tree or ":" for the index, label) of a change."""
    if staged:
        if spec:
            raise ConfigError("--staged compares the index with HEAD: give no revision with it")
        return commit(root, "HEAD"), ":", "index vs HEAD"
    if not spec:
        return commit(root, "HEAD"), None, "working tree vs HEAD"
    check_revision(spec)
    if "..." in spec:
        a, b = spec.split("...", 1)
        head = commit(root, b or "HEAD")
        base = git(root, "merge-base", commit(root, a or "HEAD"), head).decode().strip()
        return base, head, f"{b or 'HEAD'} vs merge base with {a or 'HEAD'}"
    if ".." in spec:
        a, b = spec.split("..", 1)
        return commit(root, a or "HEAD"), commit(root, b or "HEAD"), f"{b or 'HEAD'} vs {a or 'HEAD'}"
    return commit(root, spec), None, f"working tree vs {spec}"


def _sides(old: str, new: str | None) -> list[str]:
    if new is None:
        return [old]
    return ["--cached", old] if new == ":" else [old, new]


def _name_status(root: Path, old: str, new: str | None) -> list[FileChange]:
    out = git(root, *_DIFF, "--name-status", "-z", "--relative", *_sides(old, new), "--").decode("utf-8", "replace")
    parts = out.split("\0")
    files: list[FileChange] = []
    i = 0
    while i < len(parts) and parts[i]:
        code = parts[i]
        if code[0] in "RC":
            src, dst = parts[i + 1], parts[i + 2]
            i += 3
            files.append(FileChange("renamed" if code[0] == "R" else "added", src if code[0] == "R" else None, dst))
            continue
        path = parts[i + 1]
        i += 2
        status = {"A": "added", "D": "deleted"}.get(code[0], "modified")
        files.append(FileChange(status, None if status == "added" else path, None if status == "deleted" else path))
    return files


def _unquote(name: str) -> str:
    """A path as ``git diff`` prints it in a patch header, unquoted: git writes a name holding control
    characters or quotes C-style (``"a/t\\tab.py"``) and unidiff keeps the quotes. Only used to match a
    patch to a file of :func:`_name_status`, which has the exact name."""
    if len(name) < 2 or not (name.startswith('"') and name.endswith('"')):
        return name
    raw, out, i = name[1:-1], bytearray(), 0
    simple = {"t": 9, "n": 10, "r": 13, '"': 34, "\\": 92, "a": 7, "b": 8, "f": 12, "v": 11}
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            nxt = raw[i + 1]
            if nxt in simple:
                out.append(simple[nxt])
                i += 2
                continue
            if raw[i + 1:i + 4].isdigit():
                out.append(int(raw[i + 1:i + 4], 8))
                i += 4
                continue
        out += ch.encode("utf-8")
        i += 1
    return out.decode("utf-8", "replace")


def _strip_side(name: str) -> str | None:
    name = _unquote(name)
    if name == "/dev/null":
        return None
    return name[2:] if name[:2] in ("a/", "b/") else name


def changed_files(root: Path, old: str, new: str | None) -> list[FileChange]:
    """The files of a change with their changed lines (see :class:`FileChange`)."""
    from unidiff import PatchSet  # imported here: only --diff needs it

    files = _name_status(root, old, new)
    by_path = {(f.old_path, f.new_path): f for f in files}
    text = git(root, *_DIFF, "-U0", "--relative", *_sides(old, new), "--").decode("utf-8", "replace")
    for patched in PatchSet(text):
        key = (_strip_side(patched.source_file), _strip_side(patched.target_file))
        f = by_path.get(key) or next((x for x in files if x.path in (key[0], key[1])), None)
        if f is None:
            continue
        f.binary = patched.is_binary_file
        f.hunks = [(h.source_start, h.source_length, h.target_start, h.target_length) for h in patched]
    if new is None:  # untracked files are part of the working tree
        for name in git(root, "ls-files", "--others", "--exclude-standard", "-z").decode("utf-8", "replace").split("\0"):
            if name:
                files.append(FileChange("added", None, name))
    return files


def untracked_lines(root: Path, files: list[FileChange], max_bytes: int = MAX_FILE_BYTES) -> None:
    """Give untracked files their one hunk (every line of the file is new); a file :func:`read_worktree`
    does not read (a link, a device, too large) gets none."""
    for f in files:
        if f.status == "added" and not f.hunks and f.new_path:
            data = read_worktree(root, f.new_path, max_bytes)
            if isinstance(data, bytes):
                f.hunks = [(0, 0, 1, data.count(b"\n") + 1)]


def _too_large(size: int, max_bytes: int) -> Unread:
    return Unread(f"too large: {size:,} bytes, more than the {max_bytes:,} read per file (generated code? raise "
                  "GRAPHRAG_CODE_MAX_FILE_BYTES to read it)")


def read_worktree(root: Path, rel: str, max_bytes: int = MAX_FILE_BYTES) -> bytes | Unread | None:
    """The bytes of the working tree's file ``rel`` (relative to ``root``), None when there is none.

    Only a regular file inside the root is opened, and at most ``max_bytes`` of it are read: a symbolic
    link is never followed (wherever it points: ``/etc/passwd``, ``/dev/zero``, another file of the tree,
    which is read under its own name), and a pipe, socket or device is never opened (a read of one
    blocks or never ends); each is an :class:`Unread` saying so."""
    path = root / rel
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return Unread(f"unreadable ({exc.strerror or exc})")
    if stat.S_ISLNK(st.st_mode):
        try:
            target = f" to {os.readlink(path)[:200]!r}"
        except OSError:
            target = ""
        return Unread(f"a symbolic link{target}: not followed (only regular files of the tree are read)")
    if not stat.S_ISREG(st.st_mode):
        return Unread("not a regular file (a pipe, socket or device): not read")
    try:  # a folder on the way that is a link leaving the tree (git lists no file under one, but be sure)
        inside = path.parent.resolve(strict=True).is_relative_to(root.resolve(strict=True))
    except (OSError, RuntimeError):
        inside = False
    if not inside:
        return Unread("outside the analysed tree (under a linked folder): not read")
    if st.st_size > max_bytes:
        return _too_large(st.st_size, max_bytes)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:  # replaced by a link since the lstat (ELOOP), or unreadable
        return Unread(f"unreadable ({exc.strerror or exc})")
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return Unread("not a regular file (a pipe, socket or device): not read")
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        return _too_large(len(data), max_bytes)
    return data


def tree_entries(root: Path, rev: str) -> dict[str, Entry]:
    """Path (relative to the root) -> mode and object id of the files at ``rev`` under the root (``":"``:
    the index; of a conflicted path, its first stage)."""
    if rev == ":":
        out = git(root, "ls-files", "-z", "--cached", "--stage")  # <mode> <oid> <stage>\t<path>
    else:
        out = git(root, "ls-tree", "-r", "-z", rev)  # <mode> <type> <oid>\t<path>
    entries: dict[str, Entry] = {}
    for record in out.split(b"\0"):
        meta, tab, name = record.partition(b"\t")
        if not tab:
            continue
        fields = meta.decode("ascii", "replace").split(" ")
        entries.setdefault(name.decode("utf-8", "replace"), Entry(fields[0], fields[1] if rev == ":" else fields[2]))
    return entries


def tree_files(root: Path, rev: str) -> list[str]:
    """Paths (relative to the root) of the files at ``rev`` under the root (``":"``: the index)."""
    return list(tree_entries(root, rev))


def read_objects(root: Path, oids: list[str], max_bytes: int = MAX_FILE_BYTES) -> dict[str, bytes | Unread | None]:
    """The bytes of each blob (by object id), None for one the repository lacks, an :class:`Unread` for one
    over ``max_bytes`` (its size is asked first, so a huge blob is never read). Two ``git cat-file``
    processes for all of them; the requests hold object ids only, one a line."""
    unique = list(dict.fromkeys(oids))
    if not unique:
        return {}
    request = "".join(f"{o}\n" for o in unique).encode("ascii")
    result: dict[str, bytes | Unread | None] = {}
    wanted: list[str] = []
    for oid, line in zip(unique, git(root, "cat-file", "--batch-check", stdin=request).decode("ascii", "replace")
                         .splitlines()):
        fields = line.split(" ")
        if len(fields) != 3 or fields[1] != "blob":
            result[oid] = None
        elif int(fields[2]) > max_bytes:
            result[oid] = _too_large(int(fields[2]), max_bytes)
        else:
            wanted.append(oid)
    if not wanted:
        return result
    out = git(root, "cat-file", "--batch", stdin="".join(f"{o}\n" for o in wanted).encode("ascii"))
    pos = 0
    for oid in wanted:
        nl = out.index(b"\n", pos)
        header = out[pos:nl].decode("ascii", "replace")
        pos = nl + 1
        if header.endswith(" missing") or header.endswith(" ambiguous"):
            result[oid] = None
            continue
        size = int(header.rsplit(" ", 1)[1])
        result[oid] = out[pos:pos + size]
        pos += size + 1  # the content is followed by a newline
    return result


def read_entries(root: Path, entries: dict[str, Entry], paths: list[str],
                 max_bytes: int = MAX_FILE_BYTES) -> dict[str, bytes | Unread | None]:
    """The bytes of each path of a tree listed by :func:`tree_entries` (None where it has none); a symbolic
    link or a submodule is an :class:`Unread`, never read."""
    result: dict[str, bytes | Unread | None] = {}
    oids: dict[str, str] = {}
    for p in paths:
        e = entries.get(p)
        if e is None:
            result[p] = None
        elif e.mode == LINK_MODE:
            result[p] = Unread("a symbolic link: not followed (only regular files of the tree are read)")
        elif e.mode == SUBMODULE_MODE:
            result[p] = Unread("a submodule (a commit of another repository): not read")
        else:
            oids[p] = e.oid
    contents = read_objects(root, list(oids.values()), max_bytes)
    result.update({p: contents.get(oid) for p, oid in oids.items()})
    return result


def blobs(root: Path, rev: str, paths: list[str], max_bytes: int = MAX_FILE_BYTES) -> dict[str, bytes | None]:
    """The bytes of each path (relative to the root) at ``rev`` (``":"`` the index), None where it has none
    or where it is not read (a link, a submodule, over ``max_bytes``; :func:`read_entries` says why)."""
    if not paths:
        return {}
    read = read_entries(root, tree_entries(root, rev), paths, max_bytes)
    return {p: data if isinstance(data, bytes) else None for p, data in read.items()}


def change(root: Path, spec: str | None = None, *, staged: bool = False, max_bytes: int = MAX_FILE_BYTES) -> Change:
    """The files and lines of a change (see the module docstring for ``spec``)."""
    prefix(root)
    old, new, label = resolve_spec(root, spec, staged=staged)
    files = changed_files(root, old, new)
    if new is None:
        untracked_lines(root, files, max_bytes)
    return Change(label=label, old=old, new=new, files=files)
