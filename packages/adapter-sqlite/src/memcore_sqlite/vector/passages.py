"""Long texts as passages the embedding model can read whole.

A sentence-embedding model reads a bounded number of word pieces (all-MiniLM-L6-v2: 256, and it
was trained on 128); past that, text is cut off and never reaches the vector. A long memory
is therefore embedded as passages of at most :data:`PASSAGE_WORDS` words (about 130 word
pieces of English), split at sentence ends where possible, and its vector combines theirs
(:func:`combine`). The stored text is never changed.
"""

from __future__ import annotations

import re
from typing import Any

#: Words per passage: about 130 word pieces of English, the length the model was trained on.
PASSAGE_WORDS = 100
_SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+|\n+")


def passages(text: str, max_words: int = PASSAGE_WORDS) -> list[str]:
    """``text`` itself when short enough, else consecutive passages of it covering every word."""
    if len(text.split()) <= max_words:
        return [text]
    out: list[str] = []
    current: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        words = sentence.split()
        while len(words) > max_words:  # a run-on sentence: cut it by words
            if current:
                out.append(" ".join(current))
                current = []
            out.append(" ".join(words[:max_words]))
            words = words[max_words:]
        if current and len(current) + len(words) > max_words:
            out.append(" ".join(current))
            current = []
        current.extend(words)
    if current:
        out.append(" ".join(current))
    return out


def combine(vectors: Any) -> Any:
    """One unit vector for a memory from its passages' unit vectors: their renormalised mean."""
    import numpy as np

    arr = np.asarray(vectors, dtype=np.float32)
    mean = arr.mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if norm > 1e-12 else arr[0]
