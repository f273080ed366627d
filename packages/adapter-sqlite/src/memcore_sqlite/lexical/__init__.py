"""The full-text side: text analysis, FTS5 tags and query tokens, the FTS5 statements that find
a query's terms (``fts_matches``), postings held in memory (``postings/``), memory lengths
and the upkeep that keeps the FTS index in few segments.

May import: ``storage``, ``emoji`` and the core; never ``vector`` (the two signals meet in ``search``).
"""
