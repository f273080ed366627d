"""Chinese and Japanese as the planner reads them: character bigrams, numbers and negations.

A run of such text has no spaces, so it is read as its character bigrams (the rule search
uses, :mod:`memcore.segments`); numerals inside it become numbers ("三个孩子" and "3个孩子"
both count 3), and particles that carry no fact (的, 了) are left out before, so
"我的女儿叫小雨" and "我女儿叫小雨" read alike.
"""

from __future__ import annotations

import functools
import re

from memcore import segments


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5}
_DIGITS |= {"六": 6, "七": 7, "八": 8, "九": 9}
_UNITS = {"十": 10, "百": 100, "千": 1000}
_BIG = {"万": 10**4, "亿": 10**8}
#: What follows a numeral that counts something: measure words and units ("三个", "两只",
#: "五岁", "二匹", "三人"). A numeral without one is often part of a word: 四川 (a
#: province), 十分 ("very"), 一起 ("together"), 三明治 (a sandwich).
_COUNTED = _words(
    "个 岁 歳 才 只 匹 头 条 本 册 冊 杯 瓶 碗 份 次 回 遍 趟 顿 年 月 日 号 天 周 週 星期 小时"
    " 分钟 秒 口 位 名 人 辆 台 件 张 枚 双 套 家 所 层 楼 階 种 元 块 円 斤 公斤 公里 米 克 度"
    " 倍 门 节 章 首 部 场 届 级 期 つ 时 時 点钟 万 亿"
)
#: What comes before a numeral that names a rank ("第二"). Weekdays ("周三", "星期一") are
#: names, not numbers: "周一" and "周三" are two days, not a count said again.
_NAMING = ("第",)
#: Particles that carry no fact: a repeat may add or leave them out (the possessive 的,
#: the aspect particle 了, "very" 很, "also" 也, "all" or "always" 都, sentence-final
#: particles).
_FILLER = frozenset("的了很也都吧呢啊呀哦嘛啦")
#: Words those characters are part of, kept whole: Chengdu, a capital, Kyoto, a city,
#: purpose, indeed, to understand, "in order to", "except".
_HOLDING_FILLER = _words("成都 首都 京都 古都 都市 目的 的确 了解 为了 除了")
#: Words that announce a change of a fact: "now", "currently", "already", "recently", "no
#: longer", "changed to", "switched to", "moved to", "later", "finally", "this year".
CUES = _words(
    "现在 目前 如今 已经 最近 近来 不再 改成 改为 换成 搬到 搬去 后来 终于 今年 今は 現在 もう"
)
#: Characters that turn a statement into its opposite, and the kana endings that do in
#: Japanese ("飲みません", "好きではない").
_NEGATING = (
    "不",
    "没",
    "沒",
    "别",
    "別",
    "未",
    "无",
    "無",
    "非",
    "莫",
    "勿",
    "甭",
    "ない",
    "ません",
    "なかっ",
)
#: Words where those characters do not negate: "very", "future", "other people", "especially".
_NOT_NEGATING = _words(
    "非常 未来 別人 别人 特别 特別 区别 區別 差别 分别 告别 级别 类别 性别 无论 無論 无数"
)


@functools.cache
def _numeral() -> re.Pattern[str]:
    return re.compile(f"[{''.join(_DIGITS)}{''.join(_UNITS)}{''.join(_BIG)}]+")


@functools.cache
def _pause() -> re.Pattern[str]:
    run = segments.unspaced_run().pattern.rstrip("+")
    return re.compile(f"(?<={run})[,、](?={run})")


def join_pauses(folded: str) -> str:
    """``folded`` without the commas inside a sentence of Chinese or Japanese ("娘の名前は、
    さくら"): a repeat may add or leave one out, and it would cut the run in two."""
    return _pause().sub("", folded)


def value(numeral: str) -> int:
    """The number a Chinese numeral says: 两 -> 2, 十二 -> 12, 一百零五 -> 105, 二零二三 ->
    2023, and the spoken 一万五 (15,000) and 三百五 (350)."""
    if all(c in _DIGITS for c in numeral):
        return int("".join(str(_DIGITS[c]) for c in numeral))
    total = section = 0
    digit: int | None = None
    place = 1
    for c in numeral:
        if c in _DIGITS:
            digit = _DIGITS[c]
        elif c in _UNITS:
            section += (1 if digit is None else digit) * _UNITS[c]
            place, digit = _UNITS[c], None
        else:
            total += ((section + (digit or 0)) or 1) * _BIG[c]  # "万元": ten thousand
            section, place, digit = 0, _BIG[c], None
    if digit is not None:
        # A digit right after a unit is one place below it ("一万五", "三百五").
        after_unit = numeral[-2] in _UNITS or numeral[-2] in _BIG
        section += digit * place // 10 if after_unit and digit else digit
    return total + section


def _counts(run: str, start: int, end: int) -> bool:
    """Whether the numeral at ``run[start:end]`` is a number rather than part of a word."""
    numeral = run[start:end]
    if run[:start].endswith(_NAMING) or run[end:].startswith(tuple(_COUNTED)):
        return True
    if run[end:].startswith("点") and numeral != "一":
        return True  # "十点" is ten o'clock; "一点" is "a little"
    # Two numerals or more that start as numbers do ("二十", "一万五"; not 万一 or 千万).
    return len(numeral) > 1 and numeral[0] not in "百千万亿"


def words(run: str) -> list[str]:
    """A run without spaces as the planner's words: its numbers (as digits) and the bigrams
    of the text between them, with the particles of :data:`_FILLER` left out, and the words
    of :data:`CUES` it holds, each a word of its own (after the others)."""
    said = [cue for cue in CUES if cue in run]
    for cue in said:
        # Left out of the text, so what is around a cue reads as it does without one
        # ("我的体重现在是65公斤" reads as "我的体重是65公斤", and "现在").
        run = run.replace(cue, "")
    out: list[str] = []
    pos = 0
    for m in _numeral().finditer(run):
        if _counts(run, m.start(), m.end()):
            out.extend(_bigrams(run[pos : m.start()]))
            out.append(str(value(m.group())))
            pos = m.end()
    out.extend(_bigrams(run[pos:]))
    return out + said


def is_bigram(word: str) -> bool:
    """Whether ``word`` is a bigram of :func:`words` (not a number or a spaced word)."""
    return len(word) == 2 and not word.isascii() and bool(segments.unspaced_run().fullmatch(word))


def _bigrams(text: str) -> list[str]:
    return segments.bigrams("".join(c for i, c in enumerate(text) if not _filler(text, i)))


def _filler(text: str, i: int) -> bool:
    """Whether ``text[i]`` is a particle of :data:`_FILLER`, not part of a word."""
    if text[i] not in _FILLER:
        return False
    return text[i - 1 : i + 1] not in _HOLDING_FILLER and text[i : i + 2] not in _HOLDING_FILLER


def negations(folded: str) -> int:
    """How many negations a (folded) text holds in Chinese or Japanese ("不", "没有", "ない")."""
    if folded.isascii():
        return 0
    for word in _NOT_NEGATING:
        folded = folded.replace(word, " ")
    return sum(folded.count(n) for n in _NEGATING)
