"""The SQLite file itself: schema and migrations, row shapes, WAL, checkpoints, error codes,
file modes and integrity checks.

Everything here speaks ``sqlite3`` and knows nothing of search or of the store's operations.
May import: the core (``memcore``) and the standard library. One exception, named in the
import contract: the migration to schema 4 builds the vector pages of older files, so
``storage.schema`` imports ``vector.code_pages``.
"""
