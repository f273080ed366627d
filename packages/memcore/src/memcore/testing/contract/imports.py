"""The imports family: what an import's rollback or claim may take back."""

from __future__ import annotations

import uuid

import attrs
import pytest

from memcore.errors import InvalidInput, Unsupported
from memcore.ports import MemoryStore, UnclaimedDelete
from memcore.service import MemoryService
from memcore.testing.contract.fixtures import StoreFixtures
from memcore.testing.contract.harness import A1, B1, STORE, add
from memcore.values import MemoryVersion, TextItem


class ImportsContract(StoreFixtures):
    """An import's rollback takes back only what no other write has landed in since."""

    def test_a_rollback_keeps_what_another_write_landed_in_or_unsupported(
        self, ready: MemoryStore
    ) -> None:
        """A memory an import created goes with its rollback only while no other write has
        landed in it since: an add of its text (answered with its id), and a repeat that
        changes nothing (an older time), keep it. A memory already gone is not counted, and
        another tenant's scope is refused. A store that cannot tell says so."""
        alice = MemoryService(ready, store_name=STORE, scope=A1)
        if not isinstance(ready, UnclaimedDelete):
            assert not alice.tells_claims
            with pytest.raises(Unsupported):
                alice.forget_unclaimed([MemoryVersion(A1, uuid.uuid4().hex, 1)])
            return
        assert alice.tells_claims
        versions: dict[str, int] = {}
        texts = ["Ana keeps bees", "Ana sold the boat", "Ana moved to Porto", "Ana reads Saramago"]
        ids = alice.restore([TextItem(A1, t) for t in texts], versions=versions)
        claimed, older, quiet, gone = (str(i) for i in ids)
        assert set(versions) == set(ids)
        assert add(ready, A1, texts[0]) == claimed  # another writer, told it landed
        assert alice.restore([TextItem(A1, texts[1], created_at=1.0e9)]) == [older]
        assert alice.get(older).created_at != 1.0e9  # the older repeat changed nothing ...
        alice.forget(gone)
        with pytest.raises(InvalidInput):
            alice.forget_unclaimed([MemoryVersion(B1, quiet, versions[quiet])])
        kept = alice.forget_unclaimed([MemoryVersion(A1, i, versions[i]) for i in (quiet, gone)])
        assert kept == []
        kept = alice.forget_unclaimed([MemoryVersion(A1, i, versions[i]) for i in (claimed, older)])
        assert sorted(kept) == sorted([claimed, older])  # ... but it landed: kept too
        assert sorted(m.id for m in alice.every_memory()) == sorted([claimed, older])

    def test_a_claim_keeps_a_memory_from_a_rollback_or_unsupported(
        self, ready: MemoryStore
    ) -> None:
        """An import that counts a memory present claims it: its version moves and nothing
        else, so another import's rollback keeps it. One not in its scope (deleted, or
        another tenant's) is answered, not claimed; another tenant's scope is refused. A
        store that cannot tell says so."""
        alice = MemoryService(ready, store_name=STORE, scope=A1)
        if not isinstance(ready, UnclaimedDelete):
            with pytest.raises(Unsupported):
                alice.claim([(A1, uuid.uuid4().hex)])
            return
        versions: dict[str, int] = {}
        texts = ("Ana keeps bees", "Ana rows")
        ids = alice.restore([TextItem(A1, t) for t in texts], versions=versions)
        claimed, quiet = (str(i) for i in ids)
        before = alice.get(claimed)
        bobs = add(ready, B1, "Bob keeps bees")
        bob = MemoryService(ready, store_name=STORE, scope=B1)
        bobs_version = bob.get(bobs).version
        alice.forget(quiet)
        assert alice.claim([(A1, claimed), (A1, quiet), (A1, bobs)]) == [quiet, bobs]
        after = alice.get(claimed)
        assert after.version == (before.version or 0) + 1
        assert attrs.evolve(after, version=before.version) == before
        for bad in ([(B1, bobs)], [(A1, claimed), "x"], [(A1, 7)]):
            with pytest.raises(InvalidInput):
                alice.claim(bad)  # type: ignore[arg-type]
        assert bob.get(bobs).version == bobs_version  # neither claim reached it
        assert alice.forget_unclaimed([MemoryVersion(A1, claimed, versions[claimed])]) == [claimed]
        assert [m.id for m in alice.every_memory()] == [claimed]
