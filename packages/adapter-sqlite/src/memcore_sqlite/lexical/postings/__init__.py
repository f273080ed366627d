"""One tenant's FTS5 postings held in memory (``table``), the cache that builds them in the
background (``cache``) and the term lookups over them (``matches``), which answer exactly as
:mod:`memcore_sqlite.lexical.fts_matches` answers from FTS5.

May import: the rest of ``lexical``, ``storage`` and the core.
"""
