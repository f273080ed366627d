"""The store's operations: one ``BEGIN IMMEDIATE`` transaction per write (``transactions``:
where a write is made durable), adds, updates and deletes (``writes``), writes through a fact
extractor (``facts``), reads of records (``reads``), the store catalogue (``catalog``) and
batched read audits (``read_audits``).

May import: ``search``, ``lexical``, ``vector``, ``storage`` and the core; never ``dream``,
the store or the backend.
"""
