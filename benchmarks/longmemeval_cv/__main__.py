"""``python -m benchmarks.longmemeval_cv``: the same as ``python -m benchmarks longmemeval_cv``."""

from benchmarks.longmemeval_cv import main

raise SystemExit(main())
