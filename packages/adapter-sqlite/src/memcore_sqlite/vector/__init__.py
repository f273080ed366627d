"""The vector side: how a vector is stored (``stored``: float16), int8 codes of unit vectors
(``quantize``: where vectors are quantized), their bounded sketch, code pages in SQLite, the per-scope code cache with its exact
two-stage search (``cache``), long texts cut into passages, and embedding the next batch ahead
of a bulk write.

May import: the core, numpy (lazily) and ``emoji``; never ``lexical`` or ``storage`` (``code_pages``
takes a connection and runs its own statements).
"""
