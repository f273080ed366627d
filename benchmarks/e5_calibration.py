"""The mean vector the e5 embedder subtracts, and the cosines before and after it.

The sample: the Chinese sentences of ``benchmarks/data/e5_calibration_zh.txt`` (written for
this, on everyday topics, none from the Chinese paraphrases) and 150 English user turns
(first 60 words of the first user turn of each question's first two sessions, drawn with
seed 0) from the LongMemEval questions that ``benchmarks.chinese_recall`` does not measure
(every index but 3, 9, 15, ...). The mean of each language's unit vectors is taken and the two
averaged, so neither language's share of the sample sets the direction.

Then, for each embedder, the cosines of related pairs (a Chinese question and its fact; an
English retrieval-set query and a relevant fact) and of unrelated ones (every other pair),
as 5th/50th/95th percentiles, with recall@1/@5 by cosine alone.

    uv run python -m benchmarks.e5_calibration [--write] [--embedders default,multilingual,e5-raw,e5]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ZH = ROOT / "benchmarks" / "data" / "zh_paraphrases.json"
EN = ROOT / "tests" / "data" / "sqlite_retrieval_set.json"
SAMPLE_ZH = ROOT / "benchmarks" / "data" / "e5_calibration_zh.txt"
MEAN = (
    ROOT
    / "packages/adapter-sqlite/src/memcore_sqlite/embedders/data/multilingual-e5-small/mean.json"
)
MEASURED_EVERY, MEASURED_FROM = 6, 3


def english_sample(path: Path, size: int = 150) -> list[str]:
    import numpy as np

    with gzip.open(path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    turns = []
    for i, item in enumerate(data):
        if i % MEASURED_EVERY == MEASURED_FROM:
            continue
        for session in item["haystack_sessions"][:2]:
            first = next((t["content"] for t in session if t["role"] == "user"), None)
            if first:
                turns.append(" ".join(first.split()[:60]))
    picked = np.random.default_rng(0).choice(len(turns), size, replace=False)
    return [turns[i] for i in sorted(picked)]


def chinese_sample() -> list[str]:
    return [line for line in SAMPLE_ZH.read_text(encoding="utf-8").splitlines() if line.strip()]


def make(name: str) -> Any:
    if name == "default":
        from memcore_sqlite.embedders.onnx import OnnxEmbedder

        return OnnxEmbedder()
    if name == "multilingual":
        from memcore_sqlite.embedders.multilingual import MultilingualEmbedder

        return MultilingualEmbedder()
    from memcore_sqlite.embedders.e5 import E5Embedder

    return E5Embedder(raw=name == "e5-raw")


def _pct(values: Any) -> list[float]:
    import numpy as np

    return [round(float(np.percentile(values, p)), 3) for p in (5, 50, 95)]


def spread(sim: Any, relevant: list[set[int]]) -> dict[str, Any]:
    import numpy as np

    related = np.zeros(sim.shape, dtype=bool)
    for i, rel in enumerate(relevant):
        related[i, list(rel)] = True
    order = np.argsort(-sim, axis=1)
    return {
        "related_p5_p50_p95": _pct(sim[related]),
        "unrelated_p5_p50_p95": _pct(sim[~related]),
        "recall@1": round(float(np.mean([order[i, 0] in r for i, r in enumerate(relevant)])), 3),
        "recall@5": round(
            float(np.mean([bool(set(order[i, :5].tolist()) & r) for i, r in enumerate(relevant)])),
            3,
        ),
    }


def main() -> int:
    import numpy as np

    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true", help="write the e5 mean into the package")
    parser.add_argument("--embedders", default="default,multilingual,e5-raw,e5")
    parser.add_argument("--lme-data", default=None)
    args = parser.parse_args()
    if args.write:
        from benchmarks.longmemeval import DEFAULT_DATA
        from memcore_sqlite.embedders.e5 import E5Embedder

        lme = Path(args.lme_data or os.environ.get("LONGMEMEVAL_DATA", str(DEFAULT_DATA)))
        raw = E5Embedder(raw=True)
        means = [
            np.asarray(raw.embed(sample), dtype=np.float64).mean(axis=0)
            for sample in (chinese_sample(), english_sample(lme))
        ]
        mean = (means[0] + means[1]) / 2
        MEAN.parent.mkdir(parents=True, exist_ok=True)
        MEAN.write_text(
            json.dumps(
                {
                    "about": "mean unit vector of multilingual-e5-small (query: prefix) over a "
                    "generic sample; written by benchmarks/e5_calibration.py",
                    "mean": [round(float(x), 7) for x in mean],
                }
            )
            + "\n",
            encoding="utf-8",
        )
    zh = json.loads(ZH.read_text(encoding="utf-8"))["pairs"]
    en = json.loads(EN.read_text(encoding="utf-8"))
    ids = {f["id"]: i for i, f in enumerate(en["facts"])}
    result: dict[str, Any] = {}
    for name in args.embedders.split(","):
        model = make(name)

        def vec(texts: list[str], model: Any = model) -> Any:
            return np.asarray(model.embed(texts), dtype=np.float32)

        result[name] = {
            "zh_paraphrases": spread(
                vec([p["question"] for p in zh]) @ vec([p["fact"] for p in zh]).T,
                [{i} for i in range(len(zh))],
            ),
            "en_retrieval_set": spread(
                vec([q["query"] for q in en["queries"]]) @ vec([f["text"] for f in en["facts"]]).T,
                [{ids[r] for r in q["relevant"]} for q in en["queries"]],
            ),
        }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
