"""``memcore.errors``: typed, JSON-safe, and all of them exported."""

from __future__ import annotations

import memcore
from memcore.errors import InvalidInput, MemcoreError, Throttled


def test_errors_are_typed_and_json_safe() -> None:
    err = Throttled("slow down")
    assert err.retryable and isinstance(err, MemcoreError)
    assert err.to_dict() == {
        "type": "Throttled",
        "code": "throttled",
        "message": "slow down",
        "retryable": True,
    }
    assert not InvalidInput("x", field="text").retryable


def test_every_error_class_is_exported_by_the_errors_module() -> None:
    import inspect

    from memcore import errors

    defined = {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value)
        and issubclass(value, errors.MemcoreError)
        and value.__module__ == errors.__name__
    }
    assert defined == set(errors.__all__)
    assert defined <= set(memcore.__all__)
