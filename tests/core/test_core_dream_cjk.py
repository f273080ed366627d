"""The dream planner on Chinese, Japanese and fullwidth text: repeats merge, a statement and
its negation never do, and numbers count whichever way they are written."""

from __future__ import annotations

import pytest

from memcore.dream import Candidate, PlannedAction, lexicon, plan, unspaced
from memcore.scope import Scope

A = Scope("app", "alice", "agent", "run1")


def _plan(old: str, new: str, *others: str) -> list[PlannedAction]:
    """A task over ``old`` then ``new`` (and ``others``, said in between), words alone: what
    a store without vectors, or one whose embedder does not read the script, plans."""
    cands = [
        Candidate("old", A, old, 1.0),
        *(Candidate(f"x{i}", A, t, 1.5) for i, t in enumerate(others)),
        Candidate("new", A, new, 2.0),
    ]
    return plan(cands, [], [A.tenant_pattern()])


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("我女儿叫小雨", "我的女儿叫小雨"),
        ("我每天早上喝一杯黑咖啡", "我每天早上都喝一杯黑咖啡。"),
        ("我在杭州的一家互联网公司当程序员", "我在杭州一家互联网公司当程序员"),
        ("用户喜欢喝绿茶", "用户很喜欢喝绿茶"),
        ("我养了两只猫", "我养了2只猫"),
        ("我的生日是五月三日", "我的生日是5月3日"),
        ("我的手机号尾号是８８６６", "我的手机号尾号是8866"),
        ("我用ｉＰｈｏｎｅ １５", "我用iPhone 15"),
        ("My favourite editor is Vim 9", "Ｍｙ ｆａｖｏｕｒｉｔｅ ｅｄｉｔｏｒ ｉｓ Ｖｉｍ ９"),
        ("娘の名前はさくらです", "娘の名前は、さくらです"),
        ("我的猫叫咪咪，是一只橘猫", "我的猫叫咪咪是一只橘猫"),
    ],
)
def test_a_fact_said_again_in_chinese_japanese_or_fullwidth_is_merged(old: str, new: str) -> None:
    """A run of Chinese was one word, so two wordings of a fact shared none; fullwidth
    letters and digits were not read as the plain ones."""
    actions = _plan(old, new, "我每周去两次健身房", "我的车是白色的")
    [merge] = [a for a in actions if a.action == "MERGE"]
    assert merge.source_ids == ("old", "new") and merge.text == new
    assert merge.confidence >= 0.7, merge.reason


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("我对花生过敏", "我对花生不过敏"),
        ("我喜欢吃辣", "我不喜欢吃辣"),
        ("我有驾照", "我没有驾照"),
        ("我去过日本", "我没去过日本"),
        ("我的孩子上过幼儿园", "我的孩子未上过幼儿园"),
        ("晚上十点以后给我打电话", "晚上十点以后别给我打电话"),
        ("这家餐厅有停车位", "这家餐厅无停车位"),
        ("我是素食者", "我并非素食者"),
        ("私はお酒を飲みます", "私はお酒を飲みません"),
        ("I am vegetarian", "Ｉ ａｍ ｎｏｔ ｖｅｇｅｔａｒｉａｎ"),
        # Alike sentences that say different things.
        ("我姐姐住在杭州", "我姐姐住在苏州"),
        ("我每天喝两杯咖啡", "我每天喝两杯茶"),
        ("我周一去健身房", "我周三去健身房"),
        ("我很喜欢四川菜", "我很喜欢湖南菜"),
        ("弟は大学生です", "妹は大学生です"),
    ],
)
def test_a_statement_and_its_negation_or_another_fact_alike_are_left_alone(
    old: str, new: str
) -> None:
    assert _plan(old, new) == []


def test_another_count_said_of_someone_else_is_only_a_guess() -> None:
    """A sister's two children and a brother's three: never merged, and a supersession stays
    below what applies by itself."""
    actions = _plan("我姐姐有两个孩子", "我哥哥有三个孩子")
    assert all(a.action != "MERGE" and a.confidence <= 0.5 for a in actions)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("我的体重是70公斤", "我的体重现在是65公斤"),
        ("我儿子今年5岁", "我儿子今年六岁了"),
        ("我女儿上小学三年级", "我女儿现在上小学四年级"),
        ("我们公司有50个员工", "我们公司已经有80个员工了"),
        ("猫を二匹飼っています", "今は猫を三匹飼っています"),
    ],
)
def test_a_newer_chinese_or_japanese_number_supersedes_the_older(old: str, new: str) -> None:
    actions = _plan(old, new)
    [act] = actions
    assert act.action in ("UPDATE", "DELETE") and set(act.read_ids()) == {"old", "new"}
    assert act.action == "DELETE" or act.target_id == "new"
    assert act.confidence > 0.5 and "another number" in act.reason


@pytest.mark.parametrize(
    ("numeral", "value"),
    [
        ("两", 2),
        ("十", 10),
        ("十二", 12),
        ("二十", 20),
        ("一百零五", 105),
        ("二零二三", 2023),
        ("一万五", 15000),
        ("三百五", 350),
        ("两万", 20000),
        ("三千零二", 3002),
        ("十万", 100000),
        ("三亿五千万", 350000000),
        ("万", 10000),
    ],
)
def test_chinese_numerals_read_as_their_value(numeral: str, value: int) -> None:
    assert unspaced.value(numeral) == value


def test_numbers_are_read_whichever_way_they_are_written() -> None:
    assert lexicon.numbers("我有三个孩子") == lexicon.numbers("我有3个孩子") == {"3"}
    assert lexicon.numbers("我有３个孩子") == {"3"}
    # Numerals inside words are no numbers: Sichuan, "very", "together", a sandwich, weekdays.
    for text in ("我喜欢四川菜", "我十分喜欢", "我们一起去", "我吃三明治", "我周三去游泳"):
        assert lexicon.numbers(text) == frozenset(), text
    assert lexicon.words("我的女儿叫小雨") == lexicon.words("我女儿叫小雨")
    # A particle inside a word stays: Chengdu is not "Cheng".
    assert "成都" in lexicon.words("我住在成都") and "目的" in lexicon.words("我的目的")


def test_english_words_are_read_as_before() -> None:
    assert lexicon.words("I've got 3 kids at H&M") == ["i've", "got", "3", "kids", "at", "h&m"]
    assert lexicon.negations("I don't eat meat, never") == 2
