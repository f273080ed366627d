"""The tasks family: the request log, the scope listing and write tasks."""

from __future__ import annotations

from typing import Any

import pytest

from memcore.errors import InvalidInput, NotFound
from memcore.ports import MemoryStore
from memcore.testing.contract.fixtures import StoreFixtures
from memcore.testing.contract.harness import A1, A2, B1, STORE, add, all_pages


class TasksContract(StoreFixtures):
    """Every request is logged, every scope listed, every write a task of its scope."""

    def test_request_log_records_and_filters(self, ready: MemoryStore) -> None:
        mid = add(ready, A1, "audit me")
        ready.get_memory(STORE, A1, mid)
        ready.delete_memory(STORE, A1, mid)
        adds = ready.list_requests(STORE, operation="AddMemories").items
        assert adds and all(r.operation == "AddMemories" for r in adds)
        deletes = ready.list_requests(STORE, operation="DeleteMemory").items
        assert deletes and all(r.operation == "DeleteMemory" for r in deletes)
        everything = all_pages(lambda **kw: ready.list_requests(STORE, **kw), 2)
        assert {"AddMemories", "GetMemory", "DeleteMemory"} <= {r.operation for r in everything}

    def test_list_scopes(self, ready: MemoryStore) -> None:
        add(ready, A1, "one")
        add(ready, A2, "two")
        add(ready, B1, "three")
        scopes = set(all_pages(lambda **kw: ready.list_scopes(STORE, A1.tenant_pattern(), **kw), 1))
        assert scopes == {A1, A2}
        everything = set(ready.list_scopes(STORE).items)
        assert {A1, A2, B1} <= everything

    def test_tasks(self, ready: MemoryStore) -> None:
        receipt = ready.add_text(STORE, A1, "task tracked", sync=True)
        assert receipt.task_id
        task = ready.get_task(STORE, receipt.task_id)
        assert task.id == receipt.task_id
        assert task.status == "completed"
        done = ready.list_tasks(STORE, status="completed").items
        assert receipt.task_id in [t.id for t in done]
        assert ready.list_tasks(STORE, status="failed").items == ()
        with pytest.raises(NotFound):
            ready.get_task(STORE, "no-such-task")

    @pytest.mark.parametrize("status", ["done", "Completed", "\ud800", 5])
    def test_an_unknown_task_status_is_refused(self, ready: MemoryStore, status: Any) -> None:
        # Not an empty page: that would read as "no such tasks" for a misspelt status.
        add(ready, A1, "a task to list")
        with pytest.raises(InvalidInput) as refused:
            ready.list_tasks(STORE, status=status)
        assert refused.value.field == "status"

    def test_a_write_task_names_the_scope_it_wrote(self, ready: MemoryStore) -> None:
        # The service checks a task id against the caller's tenant by this scope.
        receipt = ready.add_text(STORE, A1, "task with a scope", sync=True)
        assert receipt.task_id
        assert ready.get_task(STORE, receipt.task_id).scope == A1
        listed = ready.list_tasks(STORE, pattern=B1.tenant_pattern()).items
        assert receipt.task_id not in [t.id for t in listed]
