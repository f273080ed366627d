"""A URL's ``user:password@``: shown as ``***@`` wherever a URL is printed, logged or put in
a repr, and taken out where a URL is saved or handed to a client.

An endpoint or a model's base URL may carry credentials (a proxy's basic auth); nothing
signs with them, and they must never reach output. Only ``re`` is imported, so a value's
repr can use this without loading the configuration parser.
"""

from __future__ import annotations

import re
from typing import Any

_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s]*@")


def without_userinfo(value: Any) -> Any:
    """``value`` with the ``user:password@`` of a URL shown as ``***@`` (other values as they
    are): an endpoint may carry credentials, and whatever prints it must not show them."""
    if not isinstance(value, str):
        return value
    return _USERINFO.sub(r"\1***@", value)


def strip_userinfo(value: Any) -> Any:
    """``value`` with a URL's ``user:password@`` taken out (other values as they are): what
    is offered back to be saved, or handed to a client that must not send it."""
    if not isinstance(value, str):
        return value
    return _USERINFO.sub(r"\1", value)


def repr_without_userinfo(value: Any) -> str:
    """The repr of :func:`without_userinfo` of ``value``: an attrs field's ``repr=`` for a
    value that holds a URL."""
    return repr(without_userinfo(value))
