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


def test_a_config_built_in_code_answers_as_the_public_config_error() -> None:
    """A validator's private subclass never reaches a caller under its own name."""
    import pytest

    from memcore.config import MemcoreConfig
    from memcore.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        MemcoreConfig(enable_rerank="no")  # type: ignore[arg-type]
    assert caught.value.to_dict()["type"] == "ConfigError"
    assert caught.value.to_dict()["field"] == "enable_rerank"
    assert repr(caught.value).startswith("ConfigError(")
