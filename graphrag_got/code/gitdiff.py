"""Git for the code graph: which files and lines a change touches, and the text of each side.

Everything goes through the ``git`` command itself (as a pre-commit hook or a CI job has it), run in
the analysed root, so the user's repository configuration applies. Hunks come from ``git diff -U0``,
parsed by ``unidiff``; file names from ``git diff --name-status -z`` (NUL-separated: exact even for a
name git would quote), and blobs of a revision from one ``git cat-file --batch`` process.

A change is named like ``git diff``: ``None`` (the working tree against HEAD, untracked files that git
does not ignore counted as added), ``REV`` (the working tree against REV), ``A..B`` (commit B against A),
``A...B`` (B against the merge base of A and B: what a pull request changes); ``staged=True`` compares
the index with HEAD (what a pre-commit hook is about to commit).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from graphrag_got.errors import ConfigError, GraphragGotError

#: ``git diff`` flags every call uses: no colour, no external diff or text conversion, renames found.
_DIFF = ["-c", "core.quotePath=false", "diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M"]


class GitError(GraphragGotError):
    """git is missing, the folder is not in a repository, or a revision does not exist."""


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


def commit(root: Path, rev: str) -> str:
    """The commit id ``rev`` names (a GitError naming it when it names none)."""
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


def untracked_lines(root: Path, files: list[FileChange]) -> None:
    """Give untracked files their one hunk (every line of the file is new)."""
    for f in files:
        if f.status == "added" and not f.hunks and f.new_path:
            try:
                count = (root / f.new_path).read_bytes().count(b"\n") + 1
            except OSError:
                continue
            f.hunks = [(0, 0, 1, count)]


def blobs(root: Path, rev: str, paths: list[str]) -> dict[str, bytes | None]:
    """The bytes of each path (relative to the root) at ``rev`` (``":"`` the index), None where it has none;
    one ``git cat-file --batch`` process for all of them."""
    if not paths:
        return {}
    pre = prefix(root)
    where = ":" if rev == ":" else f"{rev}:"
    request = "".join(f"{where}{pre}{p}\n" for p in paths).encode("utf-8")
    out = git(root, "cat-file", "--batch", stdin=request)
    result: dict[str, bytes | None] = {}
    pos = 0
    for p in paths:
        nl = out.index(b"\n", pos)
        header = out[pos:nl].decode("utf-8", "replace")
        pos = nl + 1
        if header.endswith(" missing") or header.endswith(" ambiguous"):
            result[p] = None
            continue
        size = int(header.rsplit(" ", 1)[1])
        result[p] = out[pos:pos + size]
        pos += size + 1  # the content is followed by a newline
    return result


def tree_files(root: Path, rev: str) -> list[str]:
    """Paths (relative to the root) of the files at ``rev`` under the root (``":"``: the index)."""
    if rev == ":":
        out = git(root, "ls-files", "-z", "--cached")
    else:
        out = git(root, "ls-tree", "-r", "-z", "--name-only", rev)
    return [p for p in out.decode("utf-8", "replace").split("\0") if p]


def change(root: Path, spec: str | None = None, *, staged: bool = False) -> Change:
    """The files and lines of a change (see the module docstring for ``spec``)."""
    prefix(root)
    old, new, label = resolve_spec(root, spec, staged=staged)
    files = changed_files(root, old, new)
    if new is None:
        untracked_lines(root, files)
    return Change(label=label, old=old, new=new, files=files)
