"""The pure dream planner: near-duplicates merge, superseded facts give way, tenants never mix."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memcore.dream import (
    Candidate,
    Neighbour,
    PlannerSettings,
    check_thresholds,
    clauses,
    decide,
    neighbours_by_cosine,
    plan,
)
from memcore.errors import InvalidInput
from memcore.scope import Scope, ScopePattern
from memcore.testing import HashingEmbedder

A = Scope("app", "alice", "agent", "run1")
A2 = Scope("app", "alice", "agent", "run2")
B = Scope("app", "bob", "agent", "run1")


def _plan(cands: list[Candidate], patterns: list[ScopePattern], **kw: bool) -> list:  # type: ignore[type-arg]
    emb = HashingEmbedder(256)
    vecs = dict(zip([c.id for c in cands], emb.embed([c.text for c in cands])))
    return plan(cands, neighbours_by_cosine(vecs), patterns, PlannerSettings(**kw))


def _applied_by_itself(old: str, new: str, similarity: float) -> list:  # type: ignore[type-arg]
    """What a ``safe_auto`` pass would apply of the plan over the older and newer memory."""
    cands = [Candidate("old", A, old, 1.0), Candidate("new", A, new, 2.0)]
    actions = plan(cands, [Neighbour("old", "new", similarity)], [A.pattern()])
    thresholds = check_thresholds(None)
    return [
        a
        for a in actions
        if decide(a.action, a.confidence, apply_mode="safe_auto", thresholds=thresholds).apply
    ]


def test_repeated_memory_is_merged_into_the_newest_wording() -> None:
    cands = [
        Candidate("m1", A, "The user likes green tea in the morning", 1.0),
        Candidate("m2", A, "the user likes green TEA in the morning!", 2.0),
        Candidate("m3", A, "The user plays chess on weekends", 3.0),
    ]
    [merge] = _plan(cands, [A.tenant_pattern()])
    assert (merge.action, merge.source_ids, merge.target_scope) == ("MERGE", ("m1", "m2"), A)
    assert merge.text == cands[1].text and merge.confidence >= 0.9 and merge.reason


def test_different_numbers_are_never_merged() -> None:
    cands = [
        Candidate("m1", A, "I have bought three tops from H&M so far", 1.0),
        Candidate("m2", A, "I have bought five tops from H&M so far", 2.0),
    ]
    actions = _plan(cands, [A.pattern()])
    assert [a.action for a in actions] != ["MERGE"]


def test_a_newer_statement_of_the_same_subject_supersedes_the_older() -> None:
    cands = [
        Candidate("old", A, "We have 30 dozen eggs stocked in the fridge at the moment", 1.0),
        Candidate("x", A, "My sister visits Lisbon every spring", 1.5),
        Candidate("new", A, "We now have 20 dozen eggs stocked in the fridge", 2.0),
    ]
    actions = _plan(cands, [A.pattern()])
    [act] = [a for a in actions if a.action in ("UPDATE", "DELETE")]
    assert {act.target_id, *act.source_ids} == {"old", "new"}
    assert "number" in act.reason


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "My sister has 2 kids and lives in Lisbon",
            "My brother now has 3 kids and lives in Lisbon",
        ),
        ("Alice has 2 cats at home in Lisbon", "Bob now has 3 cats at home in Lisbon"),
        ("He has 2 kids and lives in Lisbon", "She now has 3 kids and lives in Lisbon"),
        (
            "My daughter is 7 years old and loves swimming",
            "My son is now 9 years old and loves swimming",
        ),
        ("I ran 5 km on Monday in the park", "I ran 10 km on Tuesday in the park"),
        (
            "He has 2 kids and lives in Lisbon with his wife",
            "She now has 3 kids and lives in Lisbon",
        ),
        (
            "We have 30 dozen eggs stocked in the fridge at the moment",
            "They now have 20 dozen eggs stocked in the fridge",
        ),
    ],
)
def test_a_new_number_about_someone_else_never_supersedes_by_itself(old: str, new: str) -> None:
    """Another number, but said of another person or day than the older one: it may be a
    second fact, so only a person may let it supersede."""
    cands = [Candidate("old", A, old, 1.0), Candidate("new", A, new, 2.0)]
    actions = plan(cands, [Neighbour("old", "new", 0.85)], [A.pattern()])
    assert actions, "still proposed"
    thresholds = check_thresholds(None)
    for action in actions:
        assert not decide(
            action.action, action.confidence, apply_mode="safe_auto", thresholds=thresholds
        ).apply


@pytest.mark.parametrize(
    "newer",
    [
        "We now have 20 dozen eggs stocked in the fridge",
        "Our fridge now has 20 dozen eggs stocked",
    ],
)
def test_a_new_number_for_the_same_thing_still_supersedes_by_itself(newer: str) -> None:
    cands = [
        Candidate("old", A, "We have 30 dozen eggs stocked in the fridge at the moment", 1.0),
        Candidate("new", A, newer, 2.0),
    ]
    [action] = plan(cands, [Neighbour("old", "new", 0.85)], [A.pattern()])
    assert (action.action, action.target_id) == ("UPDATE", "new")
    assert decide(
        "UPDATE", action.confidence, apply_mode="safe_auto", thresholds=check_thresholds(None)
    ).apply


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("My son is 7 years old and loves swimming", "He is now 8 years old and loves swimming"),
        ("My sister has 2 kids and lives in Lisbon", "She now has 3 kids and lives in Lisbon"),
        (
            "Our team has 5 engineers in the Lisbon office",
            "We now have 6 engineers in the Lisbon office",
        ),
    ],
)
def test_a_possessive_names_the_owner_not_whose_the_number_is(old: str, new: str) -> None:
    """ "My son is 7" is said of the son, not of "I": "he is now 8" updates it."""
    cands = [Candidate("old", A, old, 1.0), Candidate("new", A, new, 2.0)]
    [action] = plan(cands, [Neighbour("old", "new", 0.85)], [A.pattern()])
    assert action.action in ("UPDATE", "DELETE") and "instead" not in action.reason
    assert action.confidence > PlannerSettings().other_subject_confidence


def test_memories_of_one_write_do_not_supersede_each_other() -> None:
    cands = [
        Candidate("a", A, "We have 30 dozen eggs stocked in the fridge", 5.0),
        Candidate("b", A, "We now have 20 dozen eggs stocked in the fridge", 5.0),
    ]
    assert not [a for a in _plan(cands, [A.pattern()]) if a.action in ("UPDATE", "DELETE")]


def test_two_speakers_saying_the_same_words_are_two_memories() -> None:
    # The embedded store embeds the words after the label, so the two vectors are the same.
    cands = [
        Candidate("p", A, "Priya: Nobody beats Khruangbin live, I'd fly anywhere to see them", 1.0),
        Candidate("t", A, "Tom: Nobody beats Khruangbin live, I'd fly anywhere to see them", 2.0),
    ]
    same = [Neighbour("p", "t", 1.0)]
    assert plan(cands, same, [A.pattern()]) == []
    # The same speaker saying it again is still one memory said twice.
    again = [
        cands[0],
        Candidate(
            "p2", A, "Priya: nobody beats Khruangbin live, I'd fly anywhere to see them!", 4.0
        ),
    ]
    [merge] = plan(again, [Neighbour("p", "p2", 1.0)], [A.pattern()])
    assert (merge.action, merge.source_ids) == ("MERGE", ("p", "p2"))


def test_one_speaker_never_supersedes_another() -> None:
    # 0.69: the cosine of these two lines with their labels embedded, as before.
    cands = [
        Candidate("p", A, "Priya: We have 30 dozen eggs stocked in the fridge at the moment", 1.0),
        Candidate("t", A, "Tom: We now have 20 dozen eggs stocked in the fridge", 2.0),
    ]
    for similarity in (0.69, 1.0):
        assert plan(cands, [Neighbour("p", "t", similarity)], [A.pattern()]) == []
    mine = [
        cands[0],
        Candidate("p2", A, "Priya: We now have 20 dozen eggs stocked in the fridge", 2.0),
    ]
    [act] = plan(mine, [Neighbour("p", "p2", 0.69)], [A.pattern()])
    assert act.action in ("UPDATE", "DELETE") and {act.target_id, *act.source_ids} == {"p", "p2"}


def test_an_update_still_supersedes_a_note() -> None:
    # "Note:" and "Update:" read as labels (their vectors leave them out) but name nobody.
    cands = [
        Candidate("n", A, "Note: We have 30 dozen eggs stocked in the fridge at the moment", 1.0),
        Candidate("u", A, "Update: We now have 20 dozen eggs stocked in the fridge", 2.0),
    ]
    [act] = plan(cands, [Neighbour("n", "u", 0.69)], [A.pattern()])
    assert act.action in ("UPDATE", "DELETE") and {act.target_id, *act.source_ids} == {"n", "u"}


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The user is vegetarian", "The user is not vegetarian"),
        ("The user is not vegetarian", "The user is vegetarian"),
        ("The user can swim", "The user can\u2019t swim"),
        (
            "The user likes green tea in the morning",
            "The user doesn't like green tea in the morning",
        ),
        ("I take my coffee with sugar", "I take my coffee without sugar"),
        # Negations of other languages: each pair merged at 0.81-0.85 and safe_auto applied it.
        ("Ich bin allergisch gegen Erdnüsse", "Ich bin nicht allergisch gegen Erdnüsse"),
        ("Ik drink koffie met suiker", "Ik drink geen koffie met suiker"),
        ("Eu gosto de café com açúcar", "Eu não gosto de café com açúcar"),
        ("Mi piace il caffè con lo zucchero", "Non mi piace il caffè con lo zucchero"),
        ("Jeg liker kaffe med sukker", "Jeg liker ikke kaffe med sukker"),
        ("J'aime le café avec du sucre", "Je n'aime pas le café avec du sucre"),
        ("Me gusta el café con azúcar", "Nunca me gusta el café con azúcar"),
        ("Я люблю кофе с сахаром", "Я не люблю кофе с сахаром"),
        ("저는 커피를 설탕과 함께 마셔요", "저는 커피를 설탕과 함께 마시지 않아요"),
    ],
)
def test_a_statement_and_its_negation_are_never_one_memory(old: str, new: str) -> None:
    """Their words and vectors are alike, but merging them keeps one and hides the other."""
    cands = [Candidate("old", A, old, 1.0), Candidate("new", A, new, 2.0)]
    actions = plan(cands, [Neighbour("old", "new", 0.97)], [A.pattern()])
    assert "MERGE" not in [a.action for a in actions]


@pytest.mark.parametrize(
    ("old", "new", "left_out"),
    [
        (
            "I go to the Italian place on Main Street every Friday with my wife and kids",
            "I go to the Italian place on Main Street every Friday with my wife",
            "kid",
        ),
        (
            "I go to the Italian place on Main Street every Friday with my wife",
            "I go to the Italian place on Main Street every Friday with my kids",
            "wife",
        ),
        (
            "He works at the Lisbon office as a nurse",
            "She works at the Lisbon office as a nurse",
            "he",
        ),
        (
            "I go running before breakfast every day",
            "I go running after breakfast every day",
            "before",
        ),
        (
            "The user always takes the train to work",
            "The user never takes the train to work",
            "always",
        ),
    ],
)
def test_a_merge_that_would_drop_words_of_a_memory_is_only_proposed(
    old: str, new: str, left_out: str
) -> None:
    """A MERGE keeps the newest wording: when that leaves out words another memory says, it
    may be a second fact, so the MERGE stays below the threshold that applies by itself."""
    cands = [Candidate("old", A, old, 1.0), Candidate("new", A, new, 2.0)]
    actions = plan(cands, [Neighbour("old", "new", 0.97)], [A.pattern()])
    for action in actions:
        assert not decide(
            action.action,
            action.confidence,
            apply_mode="safe_auto",
            thresholds=check_thresholds(None),
        ).apply
    merges = [a for a in actions if a.action == "MERGE"]
    assert all(left_out in a.reason for a in merges)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "The user likes green tea in the morning",
            "In the morning the user likes to drink green tea",
        ),
        ("I'm a vegetarian and I don't eat fish", "I am a vegetarian and I do not eat fish"),
        ("The user likes green tea", "the user likes green TEA!"),
    ],
)
def test_a_repeat_that_keeps_every_word_still_merges_by_itself(old: str, new: str) -> None:
    cands = [Candidate("old", A, old, 1.0), Candidate("new", A, new, 2.0)]
    [merge] = plan(cands, [Neighbour("old", "new", 0.97)], [A.pattern()])
    assert merge.action == "MERGE" and merge.text == new
    assert decide(
        "MERGE", merge.confidence, apply_mode="safe_auto", thresholds=check_thresholds(None)
    ).apply


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # the same numbers in another order, or a number read whole
        ("The user has 2 cats and 3 dogs", "The user has 3 cats and 2 dogs"),
        ("The user's suitcase weighs 3.5 kg", "The user's suitcase weighs 5.3 kg"),
        ("The dentist appointment is on 2024-05-03", "The dentist appointment is on 2024-03-05"),
        ("我家有3只猫和2只狗", "我家有2只猫和3只狗"),
        # a sign, a currency or a time of day that the words leave out
        ("The user keeps the freezer at -18 degrees", "The user keeps the freezer at 18 degrees"),
        ("The user's monthly rent is $1200", "The user's monthly rent is €1200"),
        ("The user's main language is C++", "The user's main language is C#"),
        ("The user's blood type is O+", "The user's blood type is O-"),
        ("The user's alarm is set for 6 am", "The user's alarm is set for 6 pm"),
        # the same words, swapped
        ("Alice owes Bob 50 dollars", "Bob owes Alice 50 dollars"),
        ("The user is flying from Paris to London", "The user is flying from London to Paris"),
        ("The user likes coffee but not tea", "The user likes tea but not coffee"),
        # a repeat that names someone else
        ("The user is allergic to peanuts", "The user's son is allergic to peanuts"),
        ("The user's father was born in 1950", "The user's father-in-law was born in 1950"),
    ],
)
def test_alike_memories_that_state_different_facts_never_merge_by_themselves(
    old: str, new: str
) -> None:
    """A dream pass runs at every session end; merging such a pair hid the older fact from
    search (the newest wording is kept), though both were true."""
    assert _applied_by_itself(old, new, 0.97) == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "The user's sister, who lives in Ohio, has 2 kids",
            "The user's brother, who lives in Ohio, now has 3 kids",
        ),
        (
            "The user's Netflix subscription costs 15 dollars a month",
            "The user's Spotify subscription now costs 11 dollars a month",
        ),
        ("User's flight to Paris is on May 3", "User's flight to Rome is on May 5"),
    ],
)
def test_a_new_number_with_a_word_swapped_never_supersedes_by_itself(old: str, new: str) -> None:
    """The same sentence about another thing, with its own number: the older is still true."""
    assert _applied_by_itself(old, new, 0.9) == []


def test_a_repeat_in_chinese_numerals_still_merges_with_its_digits() -> None:
    cands = [
        Candidate("old", A, "我的生日是五月三日", 1.0),
        Candidate("new", A, "我的生日是5月3日", 2.0),
    ]
    [merge] = plan(cands, [Neighbour("old", "new", 0.97)], [A.pattern()])
    assert merge.action == "MERGE"


def test_near_duplicates_of_two_tenants_are_never_paired() -> None:
    cands = [
        Candidate("a", A, "The user likes green tea", 1.0),
        Candidate("b", B, "The user likes green tea", 2.0),
    ]
    assert _plan(cands, [ScopePattern("app", "*", "*", "*")], promote_scope=True) == []


def test_promote_scope_merges_runs_of_one_agent_into_the_agent_scope() -> None:
    cands = [
        Candidate("a", A, "The user likes green tea", 1.0),
        Candidate("b", A2, "The user likes green tea", 2.0),
    ]
    tenant = A.tenant_pattern()
    assert _plan(cands, [tenant]) == []
    [merge] = _plan(cands, [tenant], promote_scope=True)
    assert merge.target_scope == Scope("app", "alice", "agent", "__default__")


def test_thresholds_follow_the_service() -> None:
    assert check_thresholds(None) == {"add": 0.8, "update": 0.85, "merge": 0.7}
    assert check_thresholds({"MERGE": 0.5})["merge"] == 0.5
    for bad in ({"delete": 0.5}, {"merge": 1.5}, {"update": True}):
        with pytest.raises(InvalidInput):
            check_thresholds(bad)  # type: ignore[arg-type]
    t = check_thresholds(None)
    assert decide("DELETE", 1.0, apply_mode="safe_auto", thresholds=t).skipped_reason == (
        "delete_requires_manual_apply"
    )
    assert decide("MERGE", 0.69, apply_mode="safe_auto", thresholds=t).skipped_reason == (
        "confidence_below_threshold"
    )
    assert decide("MERGE", 0.7, apply_mode="safe_auto", thresholds=t).apply
    assert not decide("MERGE", 1.0, apply_mode="proposal", thresholds=t).apply
    assert decide(
        "MERGE", 1.0, apply_mode="safe_auto", thresholds=t, promoted=True
    ).skipped_reason == ("promote_requires_manual_apply")


_SCOPES = [A, A2, B, Scope("app", "bob", "other", "run9"), Scope("zeta", "alice", "agent", "run1")]
_PATTERNS = [
    A.pattern(),
    A.tenant_pattern(),
    B.tenant_pattern(),
    ScopePattern("app", "alice", "agent", "*"),
    ScopePattern("zeta", "*", "*", "*"),
]
_TEXTS = [
    "The user likes green tea",
    "the user likes green TEA",
    "We have 30 dozen eggs stocked in the fridge",
    "We now have 20 dozen eggs stocked in the fridge",
    "I bought three tops from H&M",
    "I have bought five tops from H&M so far",
    "Rachel moved to Chicago",
    "Rachel just moved back to the suburbs",
]


@settings(max_examples=150, deadline=None)
@given(
    items=st.lists(
        st.tuples(st.sampled_from(_SCOPES), st.sampled_from(_TEXTS), st.integers(0, 5)),
        min_size=2,
        max_size=14,
    ),
    patterns=st.lists(st.sampled_from(_PATTERNS), min_size=1, max_size=3, unique=True),
    promote=st.booleans(),
)
def test_no_action_reads_or_writes_outside_its_task_scopes(
    items: list[tuple[Scope, str, int]], patterns: list[ScopePattern], promote: bool
) -> None:
    cands = [Candidate(f"m{i}", s, t, float(ts), i) for i, (s, t, ts) in enumerate(items)]
    by_id = {c.id: c for c in cands}
    for action in _plan(cands, patterns, promote_scope=promote):
        assert any(p.matches(action.target_scope) for p in patterns)
        tenants = {(action.target_scope.app_id, action.target_scope.tenant_id)}
        for mid in action.read_ids():
            scope = by_id[mid].scope
            assert any(p.matches(scope) for p in patterns)
            tenants.add((scope.app_id, scope.tenant_id))
        assert len(tenants) == 1


_FACTS = [
    "My cousin {n} lives in {t} and teaches chemistry there",
    "We keep {k} {p} at the cabin on Lake {l}",
    "The budget for the {p} greenhouse on {t} Road is {k}00 dollars",
]
_WORDS = {
    "n": ["Arvid", "Bodil", "Cyrus", "Dagny", "Eskil", "Freja"],
    "t": ["Lisbon", "Oslo", "Denver", "Kyoto", "Austin", "Porto"],
    "p": ["cats", "parrots", "rabbits", "turtles", "hamsters", "ferrets"],
    "l": ["Tahoe", "Como", "Bled", "Garda", "Louise", "Ohrid"],
}


@settings(max_examples=30, deadline=None)
@given(
    picks=st.lists(
        st.tuples(st.integers(0, 2), st.integers(0, 5), st.integers(2, 9), st.booleans()),
        min_size=2,
        max_size=24,
    ),
    new=st.integers(1, 6),
)
def test_a_focused_plan_is_the_full_plan_of_the_pairs_it_holds(
    picks: list[tuple[int, int, int, bool]], new: int
) -> None:
    """Plan only around the newest memories: every pair holding one of them is judged as a
    plan over all of them judges it (MERGE groups and supersessions that involve them)."""
    cands = []
    for i, (fact, w, k, cue) in enumerate(picks):
        words = {key: values[w] for key, values in _WORDS.items()}
        text = ("Now " if cue else "") + _FACTS[fact].format(k=k, **words)
        cands.append(Candidate(f"m{i:02d}", A, text, float(i), i))
    focus = {c.id for c in cands[-new:]}
    full = _plan(cands, [A.tenant_pattern()])
    emb = HashingEmbedder(256)
    vecs = dict(zip([c.id for c in cands], emb.embed([c.text for c in cands])))
    near = [n for n in neighbours_by_cosine(vecs) if n.a in focus or n.b in focus]
    focused = plan(cands, near, [A.tenant_pattern()], focus=focus)
    assert all(focus & set(a.read_ids()) for a in focused)
    involving = [a for a in full if focus & set(a.read_ids())]
    # A MERGE group or a superseded memory's best successor can hang on a pair of old
    # memories only (an old pair a previous pass already saw): those are left out here.
    old_only = {i for a in full if not focus & set(a.read_ids()) for i in a.read_ids()}
    if not old_only:
        assert sorted(focused, key=repr) == sorted(involving, key=repr)
    assert {a for a in involving if not old_only & set(a.read_ids())} <= set(focused)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("I have a dog named Max.", "Do I have a dog named Max?"),
        ("My sister Anna is a nurse in Paris.", "Is my sister Anna a nurse in Paris?"),
        (
            "Jack's swimming lessons are on Sundays at 10am.",
            "Are Jack's swimming lessons on Sundays at 10am?",
        ),
    ],
)
def test_a_question_never_replaces_the_fact_it_asks_about(old: str, new: str) -> None:
    """The question had the fact's words in its order ("do", "is" are fillers), and a
    ``safe_auto`` pass merged the fact away: search then found only the question."""
    assert _applied_by_itself(old, new, 0.97) == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "I earn $80,000 a year as a senior data analyst in Portland.",
            "If I take the Zalando offer I would earn $95,000 a year as a senior data analyst "
            "in Berlin.",
        ),
        (
            "Our rent is $2,400 a month for the house on Pine Avenue.",
            "If we move to Seattle the rent would be about $3,100 a month for a similar house.",
        ),
    ],
)
def test_a_supposition_never_supersedes_a_fact(old: str, new: str) -> None:
    assert _applied_by_itself(old, new, 0.93) == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("David wakes up at 7am on weekdays.", "I now wake up at 5:30am on weekdays."),
        (
            "David swims 20 laps at the community pool on Tuesdays.",
            "I now swim 30 laps at the community pool on Tuesdays.",
        ),
        (
            "Tom, our neighbor, has 3 chickens in his backyard.",
            "We now have 2 chickens in our backyard.",
        ),
        (
            "Karen Liu leaves the office at 6pm on weekdays.",
            "I now leave the office at 5pm on weekdays.",
        ),
        (
            "Emma's recital is on December 12 at 6pm at Lincoln Elementary.",
            "Jack's school play is on December 14 at 6pm at Lincoln Elementary.",
        ),
        (
            "I ran a half marathon in 1 hour 58 minutes.",
            "David ran a half marathon in 1 hour 45 minutes.",
        ),
    ],
)
def test_another_persons_number_is_at_most_a_proposal(old: str, new: str) -> None:
    """ "I" and "we" are stop words, so nothing told David's 7am from the user's 5:30am, and
    ``safe_auto`` hid David's fact behind the user's (README: at most 0.5 when the new
    number is said of someone else)."""
    assert _applied_by_itself(old, new, 0.95) == []
    cands = [Candidate("old", A, old, 1.0), Candidate("new", A, new, 2.0)]
    for action in plan(cands, [Neighbour("old", "new", 0.95)], [A.pattern()]):
        assert action.confidence <= 0.5, action


def test_the_same_persons_new_number_still_supersedes() -> None:
    """The subject check leaves one person's update as it was: "Jake is now 8"."""
    actions = _applied_by_itself("My son Jake is 7 years old", "Jake is now 8 years old", 0.9)
    assert [a.action for a in actions] and {a.action for a in actions} <= {"UPDATE", "DELETE"}


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("My mother Claire is 68 and lives in Bordeaux.", "My mother Claire is now 69."),
        (
            "Our daughter Mia is 3 years old, loves dinosaurs and is allergic to eggs.",
            "Our daughter Mia is now 4 years old.",
        ),
        (
            "My landlord Marco raised the rent to $1,800 and fixed the boiler.",
            "My landlord Marco raised the rent to $1,950.",
        ),
        ("I weigh 82 kg and I run 3 times a week.", "I now weigh 78 kg."),
    ],
)
def test_an_update_that_says_nothing_of_a_clause_of_the_older_is_only_proposed(
    old: str, new: str
) -> None:
    """Superseding hides the older memory whole: where the newer says nothing of one of its
    clauses ("lives in Bordeaux"), that fact would go with it, so only a person applies it."""
    cands = [Candidate("old", A, old, 1.0), Candidate("new", A, new, 2.0)]
    actions = plan(cands, [Neighbour("old", "new", 0.9)], [A.pattern()])
    assert [a.action for a in actions] == ["UPDATE"]
    assert "says nothing of" in actions[0].reason
    assert _applied_by_itself(old, new, 0.9) == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "My son Jack is 4 years old and goes to Sunny Days preschool.",
            "My son Jack is 5 years old and goes to Lincoln Elementary.",
        ),
        ("I am saving for a house; the budget is $450,000.", "The house budget is now $500,000."),
    ],
)
def test_an_update_that_restates_every_clause_still_applies_by_itself(old: str, new: str) -> None:
    [action] = _applied_by_itself(old, new, 0.9)
    assert action.target_id == "new"


def test_a_fact_said_again_in_a_later_run_supersedes_the_older_run() -> None:
    """Each conversation is a run (Hermes writes a session to its own): a fact updated in a
    later one supersedes the earlier, as within one run; another agent's memory does not."""
    old, new = "I bought 30 dozen eggs for the bakery.", "I now have 20 dozen eggs for the bakery."
    cands = [Candidate("old", A, old, 1.0), Candidate("new", A2, new, 2.0)]
    actions = plan(cands, [Neighbour("old", "new", 0.9)], [A.pattern(), A2.pattern()])
    [action] = actions
    assert (action.action, action.target_id, action.source_ids) == ("UPDATE", "new", ("old",))
    assert action.target_scope == A2
    other_agent = Scope("app", "alice", "other", "run2")
    cands = [Candidate("old", A, old, 1.0), Candidate("new", other_agent, new, 2.0)]
    patterns = [A.pattern(), other_agent.pattern()]
    assert plan(cands, [Neighbour("old", "new", 0.9)], patterns) == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("My new goal is to run a 10k under 50 minutes.", "I ran a 10k in 49 minutes!"),
        ("I hope to read 30 books this year.", "I read 12 books this year."),
        ("I weigh 82 kg and want to get down to 75 kg.", "I weigh 79 kg now."),
        (
            "We're planning a summer holiday in Sardinia from 18 to 31 July.",
            "Our flight to Sardinia is EW 9582 from BER on 18 July at 06:40.",
        ),
    ],
)
def test_an_aim_and_what_came_of_it_are_two_facts(old: str, new: str) -> None:
    """A goal, a hope or a plan is not superseded by what happened (nor the reverse): the
    goal hid behind the result, applied at 0.86-0.91."""
    cands = [Candidate("old", A, old, 1.0), Candidate("new", A2, new, 2.0)]
    actions = plan(cands, [Neighbour("old", "new", 0.9)], [A.pattern(), A2.pattern()])
    assert actions and all(a.confidence <= 0.5 for a in actions)
    assert all("aim" in a.reason for a in actions)


def test_a_plan_changed_is_still_a_plan_superseded() -> None:
    old, new = (
        "We're planning the wedding for next June.",
        "The wedding is now planned for next September, not June.",
    )
    [action] = plan(
        [Candidate("old", A, old, 1.0), Candidate("new", A, new, 2.0)],
        [Neighbour("old", "new", 0.9)],
        [A.pattern()],
    )
    assert "aim" not in action.reason


def test_a_newer_sentence_about_another_relation_is_at_most_a_proposal() -> None:
    """ "My mother moved to Miami to live with Luis" is no update of "My brother Luis lives in
    Miami with his two kids" (0.71): two relations, two people."""
    old = "My brother Luis lives in Miami with his two kids."
    new = "My mother moved to Miami to live with Luis."
    actions = plan(
        [Candidate("old", A, old, 1.0), Candidate("new", A, new, 2.0)],
        [Neighbour("old", "new", 0.9)],
        [A.pattern()],
    )
    assert actions and all(a.confidence <= 0.5 for a in actions)
    assert clauses.relation("Actually my sister's cat is 3") == "sister"


def test_an_update_that_drops_a_name_of_the_older_is_only_proposed() -> None:
    """ "in Toronto" went with the older sentence (0.91, applied); a name the newer puts in
    its place ("Sunny Days" then "Lincoln Elementary") is the place changed, still applied."""
    old = "My sister Anita is getting married on June 14 in Toronto."
    new = "My sister Anita's wedding is now on June 21, they changed the date."
    [action] = plan(
        [Candidate("old", A, old, 1.0), Candidate("new", A2, new, 2.0)],
        [Neighbour("old", "new", 0.9)],
        [A.pattern(), A2.pattern()],
    )
    assert action.confidence <= 0.5 and "Toronto" in action.reason
    [applied] = _applied_by_itself(
        "My son Jack is 4 years old and goes to Sunny Days preschool.",
        "My son Jack is 5 years old and goes to Lincoln Elementary.",
        0.9,
    )
    assert applied.action == "UPDATE"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("I weigh 79 kg now.", "I weigh 76 kg now."),
        ("Beacon has 310 paying users.", "Beacon has 520 paying users."),
        ("I drink 2 cups of coffee every morning.", "I now drink 1 cup of coffee every morning."),
    ],
)
def test_a_whole_restatement_with_a_new_value_supersedes_by_itself(old: str, new: str) -> None:
    """It was a DELETE, which only a person applies: the cleanest updates never applied."""
    [action] = _applied_by_itself(old, new, 0.9)
    assert (action.action, action.target_id, action.source_ids) == ("UPDATE", "new", ("old",))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "We are flying to Japan on May 8 at 7am.",
            "We are flying back from Japan on May 22 at 7pm.",
        ),
        (
            "The kids get $5 pocket money every week.",
            "We are thinking of giving the kids $8 pocket money every week next year.",
        ),
    ],
)
def test_a_way_back_and_a_thought_are_other_facts(old: str, new: str) -> None:
    assert _applied_by_itself(old, new, 0.9) == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("I slept 6 hours last night.", "I slept 8 hours last night."),
        ("Yesterday I spent $40 on groceries.", "Yesterday I spent $65 on groceries."),
        ("I ran 5 km today.", "I ran 8 km today."),
    ],
)
def test_one_day_s_event_never_supersedes_another_day_s_by_itself(old: str, new: str) -> None:
    """Said on two days, they are two events: the older hid behind the newer at 0.91-0.94."""
    cands = [Candidate("old", A, old, 1.0), Candidate("new", A2, new, 86_400.0 * 60)]
    actions = plan(cands, [Neighbour("old", "new", 0.9)], [A.pattern(), A2.pattern()])
    assert actions and all(a.confidence <= 0.5 for a in actions)
