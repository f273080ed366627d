"""A dream reviewer whose plan deletes what the planner's UPDATE supersedes: what the service,
or a model reviewing the plan, may propose (the local planner proposes no DELETE), so that the
DELETE's apply and undo stay tested."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from memcore.dream import Candidate, PlannedAction


class DeletingReviewer:
    def review(
        self,
        candidates: Sequence[Candidate],
        actions: Sequence[PlannedAction],
        instructions: object,
    ) -> list[PlannedAction]:
        scopes = {c.id: c.scope for c in candidates}
        return [
            attrs.evolve(
                a,
                action="DELETE",
                target_scope=scopes[a.source_ids[0]],
                target_id=a.source_ids[0],
                source_ids=(a.target_id,),
                text=None,
            )
            if a.action == "UPDATE" and a.target_id is not None
            else a
            for a in actions
        ]
