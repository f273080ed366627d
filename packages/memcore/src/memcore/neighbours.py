"""The turns around a hit, cut to a character budget: nearest first, never a gap.

A recalled turn is often usable only with what was said next to it (the assistant's answer
to it, the question it answers). Measured on the LongMemEval development split, the evidence
is a neighbour of a top-5 hit in about 2 of 107 questions, so neighbours do not take part in
ranking; a host that shows a hit may ask for them (``search(..., neighbours=1)``).
"""

from __future__ import annotations

import attrs

from memcore.graphemes import safe_end
from memcore.values import Message, TurnContext

#: A turn cut shorter than this says too little to be worth its place; the budget stops there.
MIN_CUT_CHARS = 40
ELLIPSIS = "…"


def fit(context: TurnContext, max_chars: int) -> TurnContext:
    """``context`` within ``max_chars`` characters of content. Turns are taken nearest first,
    one side then the other (the turn before, the turn after, the second before...), and the
    first that does not fit whole is cut (if at least :data:`MIN_CUT_CHARS` are left) and
    ends the context, so each side stays a run of consecutive turns."""
    before: list[Message] = []
    after: list[Message] = []
    left = max_chars
    nearest_before = list(reversed(context.before))
    sides = [(nearest_before, before), (list(context.after), after)]
    for i in range(max(len(context.before), len(context.after))):
        for source, kept in sides:
            if i >= len(source):
                continue
            turn = source[i]
            if len(turn.content) <= left:
                kept.append(turn)
                left -= len(turn.content)
                continue
            if left >= MIN_CUT_CHARS:
                end = safe_end(turn.content, left - len(ELLIPSIS))  # no half flag or accent
                cut = turn.content[:end].rstrip() + ELLIPSIS
                kept.append(attrs.evolve(turn, content=cut))
            return TurnContext(tuple(reversed(before)), tuple(after))
    return TurnContext(tuple(reversed(before)), tuple(after))
