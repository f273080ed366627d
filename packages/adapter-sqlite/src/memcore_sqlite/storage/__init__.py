"""The SQLite file itself: schema and migrations, row shapes, WAL, checkpoints, error codes,
file modes, integrity checks and the record a clean close leaves (whether the next open must
check the whole file), who else has the file open, and what a diagnostic reads of an older
file without upgrading it; and, beside the file modes, how a host writes an export's ``--out``,
how a ``~user`` path is expanded without Python's ``RuntimeError``, and whether a folder's
disk has the room a write needs (``room``, which both hosts' doctors check).

Everything here speaks ``sqlite3`` and knows nothing of search or of the store's operations.
May import: the core (``memcore``) and the standard library. Exceptions, named in the
import contract: the migrations to schemas 4 and 9 build the vector pages of older files and
rewrite their vectors as float16, so ``storage.schema`` imports ``vector.code_pages`` and
``vector.stored``.
"""
