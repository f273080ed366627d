"""Writes ``benchmarks/data/dialogs_dev.json``: a development set of short two-speaker dialogs.

Each conversation is two friends talking over several dated sessions in many short turns
("Name: text"). Facts about either speaker are said in the first person, in one of several
wordings, between small talk; each question asks about them in the third person with other
words, and names its evidence turns. Kinds: ``single-hop`` (one turn), ``multi-hop`` (two
turns: the question names what the first says and asks what the second says, which refers to
it only as "he", "she" or "it"), ``temporal`` (when: the turn says "yesterday" or "last
weekend" on its session's date) and ``open-domain`` (a likely preference, from a turn that
never names the thing asked about). Each question records its ``form``, the template it was
asked from (every conversation asks from the same forms, in other names), so that
cross-validation can hold a form out whole (:mod:`benchmarks.longmemeval_cv`).

Deterministic (seed 32): ``uv run python -m benchmarks._dialog_gen`` rewrites the same file.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

OUT = Path(__file__).parent / "data" / "dialogs_dev.json"
SEED = 32
CONVERSATIONS = 10
SESSIONS = 6

NAMES = [
    ("Maya", "Jonah"), ("Priya", "Tom"), ("Lena", "Marcus"), ("Sofia", "Dev"), ("Hana", "Luis"),
    ("Grace", "Omar"), ("Ines", "Caleb"), ("Yuki", "Sam"), ("Nora", "Felix"), ("Amara", "Ben"),
]  # fmt: skip

# Single-hop facts: (ways to say it, ways to ask it). {s}: the speaker, {o}: the other.
SINGLE = [
    (
        [
            "We finally adopted a {pet} from the shelter, the kids named {it} {pname}",
            "Guess who has a new roommate - a rescue {pet} called {pname}!",
        ],
        ["What is the name of the animal {s} adopted?", "What did {s} call the rescue animal?"],
        {
            "pet": ["beagle", "tabby cat", "greyhound", "rabbit"],
            "pname": ["Biscuit", "Pepper", "Juniper", "Waffles", "Mochi"],
            "it": ["her", "him"],
        },
    ),
    (
        [
            "I signed up for {cls} classes at the community center, Tuesdays after work",
            "Started {cls} lessons this month, I'm terrible but it's fun",
        ],
        [
            "Which course is {s} taking in the evenings?",
            "What is {s} learning at the community center?",
        ],
        {"cls": ["pottery", "salsa", "Italian", "watercolor", "welding"]},
    ),
    (
        [
            "My sister {sib} is expecting twins, due in the spring",
            "Big news in the family: {sib} is having twins!",
        ],
        ["Who in {s}'s family is pregnant?", "Which relative of {s} is going to have two babies?"],
        {"sib": ["Rosa", "Claire", "Aisha", "Mei"]},
    ),
    (
        [
            "I got the job at {firm}, I start as a {role} next month",
            "So {firm} called back - they offered me the {role} position!",
        ],
        ["Where will {s} be working?", "Which company hired {s}?"],
        {
            "firm": ["Halden Labs", "Brightwater Foods", "Ostrava Logistics", "Kite & Key Studio"],
            "role": ["data analyst", "junior architect", "sous chef", "project coordinator"],
        },
    ),
    (
        [
            "My car finally died, so I bought a used {car}",
            "Traded the old van in for a secondhand {car}, it drives like a dream",
        ],
        ["What vehicle does {s} drive now?", "What did {s} replace the broken-down car with?"],
        {"car": ["Subaru Outback", "Honda Civic", "Mazda 3", "Toyota Prius"]},
    ),
    (
        [
            "I'm allergic to {allergen}, found out the hard way at a wedding",
            "Turns out I react badly to {allergen}, had to carry an epipen since",
        ],
        ["What is {s} allergic to?", "Which food gives {s} an allergic reaction?"],
        {"allergen": ["shellfish", "peanuts", "sesame", "kiwi"]},
    ),
    (
        [
            "We're redoing the kitchen, going with {color} cabinets",
            "The contractor starts Monday; I picked {color} for the cupboards",
        ],
        [
            "What color did {s} choose for the renovation?",
            "How will {s}'s new kitchen cupboards look?",
        ],
        {"color": ["sage green", "navy blue", "butter yellow", "matte black"]},
    ),
    (
        [
            "My favorite band is {band}, I've seen them live four times",
            "Nobody beats {band} live, I'd fly anywhere to see them",
        ],
        ["Which group is {s} a big fan of?", "What band has {s} watched in concert repeatedly?"],
        {"band": ["The Lumineers", "Khruangbin", "Arctic Monkeys", "Fleetwood Mac"]},
    ),
    (
        [
            "I've been volunteering at the {place} on Saturdays",
            "Spent my Saturday morning at the {place} again, love those folks",
        ],
        ["Where does {s} volunteer?", "How does {s} spend Saturday mornings helping out?"],
        {"place": ["food bank", "animal shelter", "library literacy program", "community garden"]},
    ),
    (
        [
            "My grandmother's recipe for {dish} is the only thing I can really cook",
            "The one dish I can make without burning anything is my nana's {dish}",
        ],
        ["What dish can {s} actually cook?", "Which family recipe does {s} know how to make?"],
        {"dish": ["pierogi", "jollof rice", "lasagna", "chicken adobo"]},
    ),
]

# Multi-hop pairs: first says who/what, second says something of it by pronoun.
MULTI = [
    (
        "My neighbor {n} is a retired {job}",
        "He offered to help me fix the {thing} this weekend, so kind of him",
        "What did {s}'s neighbor, the former {job}, offer to help with?",
        {
            "n": ["Walter", "Gus", "Arthur"],
            "job": ["electrician", "plumber", "carpenter"],
            "thing": ["porch light", "leaky sink", "garden shed"],
        },
    ),
    (
        "I finished reading {book} on the flight",
        "Honestly the ending made me cry, I lent it to {friend} straight away",
        "Who did {s} pass {book} on to?",
        {
            "book": ["Klara and the Sun", "The Remains of the Day", "Pachinko"],
            "friend": ["my coworker Dana", "my brother", "my book club host"],
        },
    ),
    (
        "My best friend from college, {f}, moved to {city}",
        "She just opened a little {shop} there, near the harbor",
        "What kind of business did {s}'s college friend start in {city}?",
        {
            "f": ["Tessa", "Ruth", "Lina"],
            "city": ["Lisbon", "Halifax", "Melbourne"],
            "shop": ["bakery", "bike repair shop", "bookstore"],
        },
    ),
    (
        "We bought a {plant} for the living room",
        "It's already dropping leaves, I think I'm watering it {how}",
        "What does {s} suspect is going wrong with the {plant}?",
        {"plant": ["fiddle leaf fig", "monstera", "bonsai"], "how": ["too much", "too little"]},
    ),
    (
        "My dad took up {hobby} when he retired",
        "He entered a local competition and actually came {place}!",
        "How did {s}'s father do in the {hobby} contest?",
        {
            "hobby": ["woodcarving", "baking sourdough", "growing giant pumpkins"],
            "place": ["second", "first", "third"],
        },
    ),
    (
        "I started training for the {race}",
        "My coach wants me to add hill sprints because my {weak} is holding me back",
        "What weakness is {s} working on for the {race}?",
        {
            "race": ["city marathon", "sprint triathlon", "trail half marathon"],
            "weak": ["pace on climbs", "endurance", "breathing"],
        },
    ),
]

# Temporal: an event said with a relative day, asked "when".
TEMPORAL = [
    (
        "I went to {event} {rel}, totally worth it",
        "When did {s} attend {event}?",
        {"event": ["a jazz festival", "a book signing", "a pottery fair"]},
    ),
    (
        "Ran my first 10k {rel}! Legs are still sore",
        "When did {s} complete a 10-kilometre race?",
        {},
    ),
    (
        "I had my wisdom teeth out {rel}, eating soup all week",
        "When did {s} have dental surgery?",
        {},
    ),
    (
        "We drove up to {town} {rel} to see the fall colors",
        "When did {s} take a trip to look at the autumn leaves?",
        {"town": ["Stowe", "Asheville", "Banff"]},
    ),
    ("My team won the pub quiz {rel}, we got a free round", "When did {s}'s trivia team win?", {}),
]
RELATIVE = ["yesterday", "last weekend", "on Friday", "this morning", "two days ago"]

# Open-domain: a preference; the question names something the turn does not.
OPEN = [
    (
        "Give me a rainy day, a blanket and a whodunit and I'm happy",
        "Would {s} likely enjoy an Agatha Christie novel?",
    ),
    ("I get seasick just looking at a ferry", "Would a week-long cruise be a good gift for {s}?"),
    (
        "Spicy food is my whole personality, the hotter the better",
        "Would {s} probably like Sichuan hot pot?",
    ),
    (
        "I could spend every weekend up in the mountains with a tent",
        "Is {s} the sort of person who would enjoy backpacking in a national park?",
    ),
    (
        "Crowds stress me out, I left the stadium at halftime last time",
        "Would {s} enjoy a packed music festival?",
    ),
    ("I've been trying to cut out meat completely", "Would {s} order a steak at a restaurant?"),
]

SMALL = [
    "How was your week?",
    "Pretty hectic, work has been nonstop.",
    "Did you catch the game?",
    "No, I fell asleep on the couch, ha.",
    "Weather's been wild lately.",
    "Tell me about it, my umbrella flipped inside out.",
    "Any plans for the weekend?",
    "Not really, maybe just sleep in.",
    "I need a vacation so badly.",
    "Same. Somewhere with a beach and no email.",
    "Have you tried that new taco place?",
    "Yes! The fish tacos are unreal.",
    "My phone screen cracked again.",
    "You need a better case, seriously.",
    "Long day?",
    "The longest. Meetings back to back.",
    "I finally cleaned out the garage.",
    "Impressive, mine is a black hole.",
    "Did you watch the finale?",
    "Don't spoil it, I'm two episodes behind!",
    "Coffee later?",
    "Can't today, maybe Thursday.",
    "I'm so tired of this traffic.",
    "Take the train, it's quicker now.",
    "My mom says hi, by the way.",
    "Tell her hi back!",
    "Ugh, Mondays.",
    "At least it's a short week.",
    "I tried meditating this morning.",
    "How did that go?",
    "Lasted about three minutes.",
    "That's a start!",
    "What are you cooking tonight?",
    "Leftovers, as usual.",
    "Happy Friday!",
    "Finally.",
    "I can't believe it's already getting dark at five.",
    "Winter is coming, literally.",
    "My neighbor's dog barked all night.",
    "Earplugs, my friend.",
    "I'm thinking of getting bangs.",
    "Do it, you only live once.",
    "Did you get my message yesterday?",
    "Sorry, I saw it and forgot to reply.",
    "The wifi at the office keeps dropping.",
    "Classic.",
    "Want to split a pizza?",
    "Always.",
    "My plants are thriving for once.",
    "Look at you, green thumb!",
    "Is it just me or is everyone sick this month?",
    "Half my office is out with a cold.",
    "I burned the toast again this morning.",
    "Classic you, honestly.",
    "Did the package ever show up?",
    "Still says out for delivery, three days later.",
    "I started a new podcast on the commute.",
    "Ooh which one? I need recommendations.",
    "My landlord finally fixed the heater.",
    "Only took him two months, wow.",
    "Are you going to Mia's birthday thing?",
    "Probably, if I can get off work early.",
    "I think I pulled something at the gym.",
    "Ice and rest, don't be a hero.",
    "The new season of that baking show is out.",
    "Don't tell me who goes home first!",
    "I can't find my good headphones anywhere.",
    "Check the coat pockets, that's always where mine are.",
    "Power went out for an hour last night.",
    "Candles and board games, very romantic.",
    "My inbox is a disaster right now.",
    "Declare email bankruptcy, start over.",
    "Do you have a good dentist?",
    "Mine's fine but the waiting room is tiny.",
    "The bus was packed again this morning.",
    "I've started biking instead, it's honestly faster.",
    "I'm trying to drink more water.",
    "Get one of those giant bottles with the times on it.",
    "I keep forgetting to call the bank.",
    "Set an alarm, that's what I do.",
    "We should do a games night soon.",
    "Yes! I'll bring snacks.",
    "Someone parked in my spot again.",
    "Leave a very polite, very passive aggressive note.",
    "My cousin keeps sending me memes at 3am.",
    "Mute the chat, save your sanity.",
    "I finally finished that puzzle.",
    "The thousand-piece one? Respect.",
    "It's so humid today.",
    "My hair has given up completely.",
    "Work gave us Friday off!",
    "Lucky, we never get anything like that.",
    "I'm thinking about repainting the bathroom.",
    "Go bold, it's a small room.",
    "My laptop fan sounds like a jet engine.",
    "Time to clean out the dust, probably.",
]
REPLIES = [
    "No way, that's amazing!",
    "Oh wow, how did that happen?",
    "Good for you!",
    "That sounds like a lot.",
    "Ha, I can picture it.",
    "Seriously? Tell me more.",
    "Oh I'm so sorry.",
    "That's wonderful news.",
    "Wait, really?",
    "I love that for you.",
    "Huh, I never knew that.",
    "Makes sense.",
    "You have to show me pictures.",
    "Congrats!!",
    "Oof.",
    "That's so you.",
]


def fill(template: str, slots: dict[str, str]) -> str:
    return template.format(**slots)


def pick(rng: random.Random, options: dict[str, list[str]]) -> dict[str, str]:
    return {k: rng.choice(v) for k, v in options.items()}


def conversation(rng: random.Random, index: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    a, b = NAMES[index % len(NAMES)]
    start = date(2023, 1, 9) + timedelta(days=rng.randrange(0, 300))
    days = [start]
    for _ in range(SESSIONS - 1):
        days.append(days[-1] + timedelta(days=rng.randrange(3, 15)))
    # What each session holds besides small talk: (kind, payload, speaker).
    plan: list[list[tuple[str, Any, str]]] = [[] for _ in range(SESSIONS)]
    for t in rng.sample(SINGLE, 6):
        plan[rng.randrange(SESSIONS)].append(("single", t, rng.choice((a, b))))
    for key, m in enumerate(rng.sample(MULTI, 4)):
        first = rng.randrange(SESSIONS - 1)
        who = rng.choice((a, b))
        slots = pick(rng, m[3])
        plan[first].append(("multi1", (m, slots, key), who))
        plan[rng.randrange(first + 1, SESSIONS)].append(("multi2", (m, slots, key), who))
    for t in rng.sample(TEMPORAL, 4):
        plan[rng.randrange(SESSIONS)].append(("temporal", t, rng.choice((a, b))))
    for o in rng.sample(OPEN, 3):
        plan[rng.randrange(SESSIONS)].append(("open", o, rng.choice((a, b))))

    turns: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    cid = f"C{index + 1}"
    multi_first: dict[int, str] = {}  # multi-hop key -> its first turn

    def say(session: int, speaker: str, text: str) -> str:
        tid = f"{cid}:{session + 1}:{len(turns) + 1}"
        turns.append({"id": tid, "session": session + 1, "date": days[session].isoformat(),
                      "speaker": speaker, "text": text})  # fmt: skip
        return tid

    def ask(kind: str, form: str, question: str, evidence: list[str]) -> None:
        questions.append({"conversation": cid, "kind": kind, "form": form,
                          "question": question, "evidence": evidence})  # fmt: skip

    for session in range(SESSIONS):
        events = plan[session]
        rng.shuffle(events)
        pairs = [SMALL[i : i + 2] for i in range(0, len(SMALL) - 1, 2)]
        rng.shuffle(pairs)
        small = [line for pair in pairs for line in reversed(pair)]  # popped from the end
        length = max(rng.randrange(18, 24), len(events) + 4)
        slots_at = sorted(rng.sample(range(2, length - 1), min(len(events), length - 3)))
        speaker = rng.choice((a, b))
        queue = list(zip(slots_at, events))
        for step in range(length):
            other = b if speaker == a else a
            if queue and queue[0][0] == step:
                _, (kind, payload, who) = queue.pop(0)
                other = b if who == a else a
                if kind == "single":
                    says, asks, options = payload
                    slots = pick(rng, options)
                    tid = say(session, who, fill(rng.choice(says), slots))
                    ask(
                        "single-hop",
                        f"single-{SINGLE.index(payload)}",
                        rng.choice(asks).format(s=who, o=other),
                        [tid],
                    )
                elif kind == "multi1":
                    m, slots, _ = payload
                    multi_first[payload[2]] = say(session, who, fill(m[0], slots))
                elif kind == "multi2":
                    m, slots, _ = payload
                    tid = say(session, who, fill(m[1], slots))
                    ask(
                        "multi-hop",
                        f"multi-{MULTI.index(m)}",
                        m[2].format(s=who, **slots),
                        [multi_first[payload[2]], tid],
                    )
                elif kind == "temporal":
                    text, question, options = payload
                    slots = {**pick(rng, options), "rel": rng.choice(RELATIVE)}
                    tid = say(session, who, fill(text, slots))
                    ask(
                        "temporal",
                        f"temporal-{TEMPORAL.index(payload)}",
                        question.format(s=who, **slots),
                        [tid],
                    )
                else:
                    text, question = payload
                    tid = say(session, who, text)
                    ask("open-domain", f"open-{OPEN.index(payload)}", question.format(s=who), [tid])
                say(session, other, rng.choice(REPLIES))
                speaker = who
            else:
                say(session, speaker, small.pop())
            speaker = b if speaker == a else a
    return {"id": cid, "speakers": [a, b], "turns": turns}, questions


#: One conversation of a set, from the set's generator and its index.
Conversation = Callable[[random.Random, int], tuple[dict[str, Any], list[dict[str, Any]]]]


def build(make: Conversation = conversation, seed: int = SEED) -> dict[str, Any]:
    rng = random.Random(seed)
    convs, questions = [], []
    for i in range(CONVERSATIONS):
        conv, asked = make(rng, i)
        convs.append(conv)
        questions.extend(asked)
    return {"seed": seed, "conversations": convs, "questions": questions}


def write(data: dict[str, Any], out: Path) -> int:
    """Write a set and print what it holds."""
    out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    kinds: dict[str, int] = {}
    for q in data["questions"]:
        kinds[q["kind"]] = kinds.get(q["kind"], 0) + 1
    turns = [len(c["turns"]) for c in data["conversations"]]
    print(json.dumps({"out": str(out), "turns": turns, "questions": kinds}))
    return 0


def main() -> int:
    return write(build(), OUT)


if __name__ == "__main__":
    raise SystemExit(main())
