"""Suite-wide collection rules."""

from __future__ import annotations

import sys

collect_ignore: list[str] = []
if sys.version_info < (3, 11):
    # hermes-agent, the host of the plugin, supports Python 3.11 to 3.13 only; on 3.10 the
    # library, the stores and the CLI are tested, the Hermes plugin cannot be.
    collect_ignore.append("hermes")
