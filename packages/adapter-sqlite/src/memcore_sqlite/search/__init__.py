"""A search from arguments to hits: the pipeline (``pipeline``), lexical ranking and fusion
(``ranking``: where a search is ranked), the fused order made exact only as far as it is read
(``fused_order``, ``exact_order``), the vector stage run beside the lexical one (``overlap``)
and recall's preference for current memories (``supersession``).

May import: ``lexical``, ``vector``, ``storage`` and the core; never ``operations``.
"""
