"""The record value's name: ``MemoryRecord``, with its old name ``Memory`` kept importable."""

from __future__ import annotations

import pytest

import memcore
from memcore import values
from memcore.values import MemoryRecord


def test_the_records_old_name_imports_with_a_deprecation_warning() -> None:
    with pytest.warns(DeprecationWarning, match="use memcore.values.MemoryRecord") as caught:
        from memcore.values import Memory  # type: ignore[attr-defined]
    assert Memory is MemoryRecord
    assert caught[0].filename == __file__  # the warning names the importing line


def test_the_facade_and_the_record_have_different_names() -> None:
    assert memcore.Memory is not MemoryRecord
    assert memcore.MemoryRecord is MemoryRecord
    assert memcore.MemoryUnit is MemoryRecord  # the package's earlier name for the record


def test_other_missing_names_are_still_missing() -> None:
    with pytest.raises(AttributeError, match="NoSuchValue"):
        values.NoSuchValue  # type: ignore[attr-defined]  # noqa: B018
