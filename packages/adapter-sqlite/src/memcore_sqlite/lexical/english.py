"""How common a query word is in ordinary English: a prior for its lexical weight.

A store's own document frequency says little when the store is small: in a 120-turn
conversation a common verb held by three turns ("take") has as much IDF as a rare word held
by three, and a short turn holding it outranks the evidence. The shipped embedder's uncased
WordPiece vocabulary already lists English words in descending corpus frequency from id
:data:`FIRST_WORD` on ("the", "of", ... "take" 2202, ... "autumn" 7114), so a word's rank r
there is a Zipf prior at no cost: frequency about 1/r, prior IDF about log r. A word absent
from it (most names, rare words and numbers, CJK) is taken as rare and keeps its whole weight.

The table is read on the first query that asks for it, never at import. Without it (package
data stripped, a damaged file) every word keeps its whole weight, as before the prior: a
ranking nudge is not worth a search that fails; a warning says why.
"""

from __future__ import annotations

import functools
import json
import logging
import math
from collections.abc import Mapping
from pathlib import Path

_log = logging.getLogger(__name__)

#: The first whole word of BERT's uncased vocabulary ("the"); ids below it are reserved
#: tokens and single characters.
FIRST_WORD = 1996
#: The vendored tokenizer, which the ONNX embedder reads too; found beside this package, not
#: through ``importlib.resources``, whose import alone cost more than reading the file on the
#: first search of a fresh process.
TOKENIZER = (
    Path(__file__).resolve().parent.parent
    / "embedders"
    / "data"
    / "all-MiniLM-L6-v2"
    / "tokenizer.json"
)


@functools.cache
def ranks() -> Mapping[str, int]:
    """The vocabulary: each token's id, a whole word's rank being id - FIRST_WORD + 1 ("the"
    is 1). Kept as parsed: a query term never holds the "##" that marks a word's piece.
    Empty when the file cannot be read: no word is then common."""
    try:
        vocab = json.loads(TOKENIZER.read_text(encoding="utf-8"))["model"]["vocab"]
        if not isinstance(vocab, dict):
            raise TypeError(type(vocab).__name__)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        _log.warning(
            "the English word list %s could not be read (%s): lexical scores weigh every "
            "query word by the store alone",
            TOKENIZER,
            type(exc).__name__,
        )
        return {}
    return vocab


def share(term: str, rare_rank: int, strength: float = 1.0) -> float:
    """The share of ``term``'s IDF kept: ln(1 + r) / ln(1 + ``rare_rank``), at most 1, to the
    power ``strength``.

    A word ranked ``rare_rank`` or rarer in English keeps its whole weight, a more common one
    keeps the share its prior IDF is of a rare word's; a term that is not a plain ASCII word
    of the vocabulary keeps it all. Never 0, so a query of common words still has weights."""
    if not term.isascii():
        return 1.0
    r = ranks().get(term, 0) - FIRST_WORD + 1
    if r < 1 or r >= rare_rank:
        return 1.0
    return float((math.log1p(r) / math.log1p(rare_rank)) ** strength)
