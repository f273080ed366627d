"""How the fake reads a text: the words it matches on and the key it keeps a text once by.

Callers reach ``content_key`` through this module (``reading.content_key``), so that a test can
make the fake keep a repeated text twice, as a service that promises no dedup may."""

from __future__ import annotations

import hashlib
import re

from memcore.scope import Scope

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")


def tokens(text: str) -> set[str]:
    """Lower-cased words, plus character bigrams for CJK runs (which have no spaces)."""
    out: set[str] = set()
    for word in _WORD.findall(text.lower()):
        for run in _CJK.findall(word):
            out.update(run[i : i + 2] for i in range(len(run) - 1))
            if len(run) == 1:
                out.add(run)
        rest = _CJK.sub(" ", word).split()
        out.update(rest)
    return out


def content_key(scope: Scope, text: str) -> str:
    """One text of one scope is one memory: the key of that text in that scope."""
    return hashlib.sha256(f"{scope}\x00{text.strip()}".encode("utf-8", "surrogatepass")).hexdigest()
