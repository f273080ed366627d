"""Writes ``benchmarks/data/dialogs_echo.json``: a second dialog development set, in which the
questions use the words of their evidence and those words come back in other turns.

The first set (:mod:`benchmarks._dialog_gen`) asks every question in other words than its
evidence: on the half of its questions that share a word with an evidence turn, every ranking
finds it, and on the other half lexical search finds almost nothing, so that set can only
ever reward the vector signal. Here, as when questions are written by someone looking at the
conversation, a question names what its evidence names ("When did Ada run a 10k race?" for
"Ran my first 10k race last weekend!"), and the conversation says those words again where
they do not answer it ("echoes"): a plan before the event and a memory of it after, the other
speaker asking about it, the same noun in another story. Longer conversations than the first
set's (twelve sessions, about 270 turns) with more facts each, so a word is shared with more
turns. Kinds as in the first set: ``single-hop``, ``multi-hop`` (the question names what the
first turn says and asks what the second, which says "he", "she" or "it", says), ``temporal``
(the evidence says "yesterday" or "last weekend" on its session's date) and ``open-domain``
(a likely preference, from a turn that never names the thing asked about). Each question
records its ``form`` (its template), so that cross-validation can hold a form out whole.

Deterministic (seed 33): ``uv run python -m benchmarks._dialog_echo_gen`` rewrites the same
file.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from benchmarks._dialog_gen import REPLIES, SMALL, build, fill, pick, write

OUT = Path(__file__).parent / "data" / "dialogs_echo.json"
SEED = 33
CONVERSATIONS = 10
SESSIONS = 12

NAMES = [
    ("Ada", "Ravi"), ("Chloe", "Mateo"), ("Farah", "Quinn"), ("Greta", "Hugo"), ("Iris", "Kofi"),
    ("Juno", "Pavel"), ("Leila", "Oscar"), ("Mira", "Theo"), ("Noor", "Silas"), ("Zoe", "Arjun"),
]  # fmt: skip

# Single-hop: (ways to say it, ways to ask it, echoes, slots). {s}: the speaker.
SINGLE = [
    (
        [
            "We adopted a {pet} from the shelter last week, the kids named {it} {pname}",
            "Meet {pname}, the {pet} we just adopted from the shelter!",
        ],
        [
            "What did {s} name the {pet} adopted from the shelter?",
            "What is the name of {s}'s {pet}?",
        ],
        [
            "The shelter by my office is doing free adoption days this month",
            "My aunt's {pet} just had surgery, poor thing",
            "Do you think a {pet} would be okay in a small apartment?",
            "We walked past the shelter and the kids wanted to adopt every animal",
        ],
        {
            "pet": ["beagle", "tabby cat", "greyhound", "rabbit"],
            "pname": ["Biscuit", "Pepper", "Juniper", "Waffles", "Mochi"],
            "it": ["her", "him"],
        },
    ),
    (
        [
            "I signed up for {cls} classes at the community center, Tuesdays after work",
            "Started {cls} lessons at the community center this month, I'm terrible but it's fun",
        ],
        [
            "What classes did {s} sign up for at the community center?",
            "Which lessons is {s} taking at the community center?",
        ],
        [
            "The community center is closed for repairs next week",
            "Have you ever thought about taking classes just for fun?",
            "My sister took {cls} classes years ago and quit after two weeks",
            "They're raising the fees at the community center again",
        ],
        {"cls": ["pottery", "salsa", "Italian", "watercolor", "welding"]},
    ),
    (
        [
            "My sister {sib} is expecting twins, due in the spring",
            "Big news: my sister {sib} is pregnant with twins!",
        ],
        [
            "Which of {s}'s sisters is expecting twins?",
            "What is the name of {s}'s pregnant sister?",
        ],
        [
            "My sister keeps borrowing my car without asking",
            "Twins run in my family, apparently",
            "My coworker is pregnant and still biking to work every day",
            "Are you close with your sister?",
        ],
        {"sib": ["Rosa", "Claire", "Aisha", "Mei"]},
    ),
    (
        [
            "I got the job at {firm}, I start as a {role} next month",
            "{firm} called back - they offered me the {role} job!",
        ],
        ["Which company offered {s} a job?", "What job did {s} get offered at {firm}?"],
        [
            "My old boss just got a job at a startup",
            "I keep seeing ads for {role} jobs everywhere",
            "How's the job hunt going?",
            "{firm} is sponsoring the marathon this year, I saw their banner",
        ],
        {
            "firm": ["Halden Labs", "Brightwater Foods", "Ostrava Logistics", "Kite & Key Studio"],
            "role": ["data analyst", "junior architect", "sous chef", "project coordinator"],
        },
    ),
    (
        [
            "My old car finally died, so I bought a used {car}",
            "Traded the old van in for a used {car}, it drives like a dream",
        ],
        ["What car did {s} buy after the old one died?", "Which used car did {s} get?"],
        [
            "My car is making that clicking noise again",
            "Used car prices are insane right now",
            "Do you still have that old van?",
            "A {car} cut me off on the highway this morning",
        ],
        {"car": ["Subaru Outback", "Honda Civic", "Mazda 3", "Toyota Prius"]},
    ),
    (
        [
            "I'm allergic to {allergen}, found out the hard way at a wedding",
            "Turns out I'm allergic to {allergen}, I carry an epipen now",
        ],
        ["What is {s} allergic to?", "What allergy did {s} find out about at a wedding?"],
        [
            "The wedding was beautiful but the speeches went on forever",
            "My nephew has so many allergies, birthday parties are a nightmare",
            "Is that restaurant okay for people with allergies?",
            "We're going to a wedding in June, I need a gift idea",
        ],
        {"allergen": ["shellfish", "peanuts", "sesame", "kiwi"]},
    ),
    (
        [
            "We're redoing the kitchen, going with {color} cabinets",
            "The kitchen contractor starts Monday; I picked {color} for the cabinets",
        ],
        [
            "What color cabinets did {s} pick for the kitchen?",
            "What color is {s} going with in the kitchen?",
        ],
        [
            "Our kitchen is so small we eat standing up",
            "The contractor never called me back about the fence",
            "Painting cabinets is harder than it looks",
            "I love a {color} front door, very bold",
        ],
        {"color": ["sage green", "navy blue", "butter yellow", "matte black"]},
    ),
    (
        [
            "My favorite band is {band}, I've seen them live four times",
            "Nobody beats {band} live, I'd fly anywhere to see them",
        ],
        ["What is {s}'s favorite band?", "Which band would {s} fly anywhere to see live?"],
        [
            "My brother's band is playing at the pub on Friday",
            "Did you see the lineup for the summer festival?",
            "I've never been to a live concert, believe it or not",
            "{band} is on the radio every time I get in the car",
        ],
        {"band": ["The Lumineers", "Khruangbin", "Arctic Monkeys", "Fleetwood Mac"]},
    ),
    (
        [
            "I've been volunteering at the {place} on Saturdays",
            "Spent Saturday volunteering at the {place} again, love those folks",
        ],
        ["Where does {s} volunteer on Saturdays?", "At which place does {s} volunteer?"],
        [
            "Saturdays are for sleeping in, as far as I'm concerned",
            "My office wants everyone to log volunteering hours now",
            "They're looking for volunteers at the school fair",
            "Drove past the {place} on my way home",
        ],
        {"place": ["food bank", "animal shelter", "library literacy program", "community garden"]},
    ),
    (
        [
            "My grandmother's {dish} recipe is the only thing I can really cook",
            "The one recipe I can make without burning it is my grandmother's {dish}",
        ],
        [
            "Which of {s}'s grandmother's recipes can {s} cook?",
            "What dish can {s} cook from a family recipe?",
        ],
        [
            "My grandmother turns ninety next month",
            "I found a great {dish} place downtown",
            "Cooking for one is so depressing",
            "Send me a recipe that takes under twenty minutes",
        ],
        {"dish": ["pierogi", "jollof rice", "lasagna", "chicken adobo"]},
    ),
    (
        [
            "I bought a secondhand {instrument} and I'm teaching myself from videos",
            "Learning the {instrument} from online videos, my neighbors must hate me",
        ],
        [
            "What instrument is {s} learning from online videos?",
            "Which secondhand instrument did {s} buy?",
        ],
        [
            "My kid wants to learn an instrument, any ideas?",
            "There's a guy who plays the {instrument} outside the station every morning",
            "I watched videos all night instead of sleeping",
            "My neighbors are renovating, the drilling never stops",
        ],
        {"instrument": ["cello", "banjo", "trumpet", "ukulele"]},
    ),
    (
        [
            "We're moving to a bigger apartment in {hood} next month",
            "Signed the lease on an apartment in {hood}, moving in a few weeks",
        ],
        ["Which neighborhood is {s} moving to?", "Where is {s}'s new apartment?"],
        [
            "Moving boxes are so expensive now",
            "{hood} has the best farmers market",
            "My apartment's heating is broken again",
            "Are you ever going to move out of the city?",
        ],
        {"hood": ["Riverside", "Old Town", "the Heights", "Eastgate"]},
    ),
    (
        [
            "I'm growing {veg} on the balcony this year",
            "The {veg} on my balcony are finally coming up",
        ],
        ["What is {s} growing on the balcony?", "Which vegetables is {s} growing this year?"],
        [
            "The balcony is covered in pigeon feathers again",
            "I bought {veg} at the market, they were huge",
            "My mom's vegetable garden is taking over her whole yard",
            "Growing anything in this heat feels impossible",
        ],
        {"veg": ["tomatoes", "chili peppers", "snap peas", "zucchinis"]},
    ),
    (
        [
            "I'm learning {lang} before our trip to {country} in the fall",
            "Practicing my {lang} every night for the trip to {country}",
        ],
        ["What language is {s} learning before the trip?", "Where is {s} going on the trip?"],
        [
            "My {lang} teacher in high school was terrifying",
            "Trip planning stresses me out more than the trip itself",
            "Do you know anyone who's been to {country}?",
            "I can't learn languages, my brain refuses",
        ],
        {"lang": ["Portuguese", "Japanese", "Greek"], "country": ["Brazil", "Japan", "Greece"]},
    ),
    (
        [
            "I broke my {bone} falling off a {vehicle}, six weeks in a cast",
            "So I'm in a cast for six weeks, broke my {bone} on a {vehicle}",
        ],
        ["What did {s} break falling off a {vehicle}?", "Why is {s} in a cast?"],
        [
            "My nephew wants a {vehicle} for his birthday",
            "I almost fell on the ice this morning",
            "Six weeks until the holidays, can you believe it",
            "The doctor had me waiting for two hours",
        ],
        {"bone": ["wrist", "ankle", "collarbone"], "vehicle": ["scooter", "skateboard", "bike"]},
    ),
    (
        [
            "Our book club is reading {book} this month",
            "Book club picked {book}, I'm only halfway through",
        ],
        ["What book is {s}'s book club reading?", "Which book did {s}'s book club pick?"],
        [
            "I haven't finished a book in months",
            "My sister's book club is mostly wine",
            "Is {book} worth reading? Everyone keeps mentioning it",
            "The library has a waitlist for everything",
        ],
        {"book": ["Pachinko", "Circe", "The Overstory", "Piranesi"]},
    ),
]

# Multi-hop: (first turn, second turn, question, echoes, slots).
MULTI = [
    (
        "My neighbor {n} is a retired {job}",
        "He offered to fix our {thing} this weekend, so kind of him",
        "What did {s}'s neighbor, the retired {job}, offer to fix?",
        [
            "Our neighbors are having a loud party again",
            "The {thing} has been broken since spring",
            "My dad was a {job} for thirty years",
        ],
        {
            "n": ["Walter", "Gus", "Arthur"],
            "job": ["electrician", "plumber", "carpenter"],
            "thing": ["porch light", "leaky sink", "garden shed"],
        },
    ),
    (
        "I finished reading {title} on the flight",
        "Honestly the ending made me cry, I lent it to {friend} straight away",
        "Who did {s} lend {title} to?",
        [
            "Flights are so cramped these days",
            "Can I borrow that novel when you're done?",
            "I cried at a commercial yesterday, embarrassing",
        ],
        {
            "title": ["Klara and the Sun", "The Remains of the Day", "Never Let Me Go"],
            "friend": ["my coworker Dana", "my brother", "my book club host"],
        },
    ),
    (
        "My best friend from college, {f}, moved to {city}",
        "She just opened a little {shop} there, near the harbor",
        "What did {s}'s best friend from college open in {city}?",
        [
            "{city} is on my travel list",
            "College feels like a hundred years ago",
            "There's a new {shop} opening on our street",
        ],
        {
            "f": ["Tessa", "Ruth", "Lina"],
            "city": ["Lisbon", "Halifax", "Melbourne"],
            "shop": ["bakery", "bike repair shop", "bookstore"],
        },
    ),
    (
        "We bought a {plant} for the living room",
        "It's already dropping leaves, I think I'm watering it {how}",
        "Why does {s} think the {plant} is dropping leaves?",
        [
            "My living room gets no light at all",
            "I kill every plant I touch",
            "The leaves are turning already, fall is here",
        ],
        {"plant": ["fiddle leaf fig", "monstera", "bonsai"], "how": ["too much", "too little"]},
    ),
    (
        "My dad took up {hobby} when he retired",
        "He entered a local competition and came {place}!",
        "How did {s}'s dad do in the {hobby} competition?",
        [
            "Retirement sounds amazing, I'd sleep for a year",
            "There's a {hobby} competition at the county fair",
            "My dad still calls me about his phone settings",
        ],
        {
            "hobby": ["woodcarving", "sourdough baking", "growing giant pumpkins"],
            "place": ["second", "first", "third"],
        },
    ),
    (
        "I started training for the {race}",
        "My coach wants hill sprints because my {weak} is holding me back",
        "What is holding {s} back in training for the {race}?",
        [
            "The {race} closes half the roads downtown",
            "I could never run that far",
            "My coach in high school made us run sprints for fun",
        ],
        {
            "race": ["city marathon", "sprint triathlon", "trail half marathon"],
            "weak": ["pace on climbs", "endurance", "breathing"],
        },
    ),
    (
        "My cousin {c} is getting married in {month}",
        "She asked me to give a speech at the reception, I'm terrified",
        "What did {s}'s cousin {c} ask {s} to do at the wedding reception?",
        [
            "Wedding season is so expensive",
            "I hate giving speeches at work",
            "My cousins all live on the other coast",
        ],
        {"c": ["Elena", "Bea", "Nadia"], "month": ["May", "June", "September"]},
    ),
    (
        "We finally booked the cabin at {lake} for July",
        "It has a hot tub and a canoe, the kids are losing their minds",
        "What does the cabin at {lake} that {s} booked have?",
        [
            "Finally booked my dentist appointment",
            "We rented a canoe once and tipped it immediately",
            "{lake} is freezing even in July",
        ],
        {"lake": ["Lake Tahoe", "Loon Lake", "Crater Lake"]},
    ),
]

# Temporal: (the plan before, the event said with a relative day, the memory after, question).
TEMPORAL = [
    (
        "I got tickets for {event} next weekend",
        "Went to {event} {rel}, totally worth it",
        "Still thinking about {event}, what a day",
        "When did {s} go to {event}?",
        {"event": ["the jazz festival", "the food truck rally", "the pottery fair"]},
    ),
    (
        "Signed up for my first 10k race next month",
        "Ran my first 10k race {rel}! Legs are still sore",
        "Thinking about another 10k race in the spring",
        "When did {s} run a 10k race?",
        {},
    ),
    (
        "The dentist says my wisdom teeth have to come out",
        "Had my wisdom teeth out {rel}, eating soup all week",
        "My face is finally less swollen from the wisdom teeth",
        "When did {s} have wisdom teeth removed?",
        {},
    ),
    (
        "We want to drive up to {town} to see the fall colors",
        "Drove up to {town} {rel} to see the fall colors",
        "I still have fall colors photos from {town} on my phone",
        "When did {s} drive to {town} to see the fall colors?",
        {"town": ["Stowe", "Asheville", "Banff"]},
    ),
    (
        "Our pub quiz team made the final on Thursday",
        "Our team won the pub quiz {rel}, free round for everyone",
        "The pub quiz this week was impossible, we came last",
        "When did {s}'s team win the pub quiz?",
        {},
    ),
    (
        "My parents are visiting next month, I'm cleaning everything",
        "My parents flew in {rel}, the apartment has never been cleaner",
        "My parents left, back to takeout dinners",
        "When did {s}'s parents fly in to visit?",
        {},
    ),
    (
        "I have a job interview at the museum next week",
        "Had the interview at the museum {rel}, I think it went well",
        "Still no news from the museum interview",
        "When did {s} have the interview at the museum?",
        {},
    ),
]
RELATIVE = ["yesterday", "last weekend", "on Friday", "this morning", "two days ago", "last night"]

# Open-domain: (a preference, a question naming what the turn does not, echoes).
OPEN = [
    (
        "Give me a rainy day, a blanket and a whodunit and I'm happy",
        "Would {s} likely enjoy an Agatha Christie novel?",
        ["My book club hated the last novel we read", "I'm not a big reader, honestly"],
    ),
    (
        "I get seasick just looking at a ferry",
        "Would a week-long cruise be a good gift for {s}?",
        ["My parents just got back from a cruise, they loved it", "Gift ideas for my boss?"],
    ),
    (
        "Spicy food is my whole personality, the hotter the better",
        "Would {s} probably like Sichuan hot pot?",
        ["There's a hot pot place opening near work", "I like my food mild, I'm a coward"],
    ),
    (
        "I could spend every weekend up in the mountains with a tent",
        "Would {s} enjoy backpacking in a national park?",
        ["The national park was packed with tourists", "My backpack strap broke on the bus"],
    ),
    (
        "Crowds stress me out, I left the stadium at halftime last time",
        "Would {s} enjoy a packed music festival?",
        ["The music festival lineup is out", "My brother lives for crowded festivals"],
    ),
    (
        "I've been trying to cut out meat completely",
        "Would {s} order a steak at a restaurant?",
        ["That steak restaurant downtown closed", "Restaurant prices are out of control"],
    ),
    (
        "Honestly I'd rather read the manual than talk to anyone on the phone",
        "Would {s} rather call customer support than look it up?",
        ["Customer support had me on hold for an hour", "Look it up, don't guess"],
    ),
    (
        "I grew up with three cats and I'd have ten if I could",
        "Would {s} want to foster kittens?",
        ["They need people to foster kittens at the vet", "Kittens are chaos in a tiny body"],
    ),
]

# More small talk than the first set's, since these conversations are twice as long.
MORE_SMALL = [
    "Did you sleep at all last night?",
    "Barely, the neighbors were at it again.",
    "I'm making soup, want some?",
    "Yes please, I'm starving.",
    "The printer at work is possessed.",
    "Kick it, works every time.",
    "I finally returned those shoes.",
    "Took you long enough.",
    "Is it supposed to rain tomorrow?",
    "All week, apparently.",
    "I got a parking ticket, ugh.",
    "Classic Monday energy.",
    "Have you seen my blue scarf?",
    "You left it here last time.",
    "I'm trying a new coffee place.",
    "Report back if it's good.",
    "My sister called, she says hi.",
    "Tell her I said hi too.",
    "I can't stop yawning today.",
    "Go to bed early tonight, seriously.",
    "The elevator is broken again.",
    "Good cardio, look on the bright side.",
    "I think I'm getting a cold.",
    "Tea with honey, trust me.",
    "Work is quiet this week.",
    "Enjoy it while it lasts.",
    "I tried that yoga video you sent.",
    "Did you survive?",
    "My phone updated overnight and everything moved.",
    "I hate when that happens.",
    "We ran out of milk again.",
    "I'll grab some on the way.",
    "Traffic was backed up for miles.",
    "Was there an accident?",
    "I fixed the squeaky door finally.",
    "A miracle, honestly.",
    "The new intern is really sharp.",
    "That's a nice change.",
    "I lost my keys for an hour this morning.",
    "Where were they?",
    "In the fridge, don't ask.",
    "Ha, I won't.",
    "I'm so behind on laundry.",
    "Me too, it's a mountain.",
    "Sunset was gorgeous tonight.",
    "Send me a picture next time.",
    "I ordered way too much takeout.",
    "Leftovers for tomorrow then.",
]


def conversation(rng: random.Random, index: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One conversation: its turns, and its questions with their evidence turn ids."""
    a, b = NAMES[index % len(NAMES)]
    start = date(2023, 1, 9) + timedelta(days=rng.randrange(0, 200))
    days = [start]
    for _ in range(SESSIONS - 1):
        days.append(days[-1] + timedelta(days=rng.randrange(5, 15)))
    # Each session's event turns in order: (text, speaker, reply?, ask), where ``ask`` names the
    # question whose evidence this turn is (or a multi-hop pair's key).
    plan: list[list[tuple[str, str, bool, Any]]] = [[] for _ in range(SESSIONS)]

    def other(who: str) -> str:
        return b if who == a else a

    def echo(texts: list[str], slots: dict[str, str], avoid: set[int]) -> None:
        for text in texts:
            session = rng.choice([s for s in range(SESSIONS) if s not in avoid])
            plan[session].append((fill(text, slots), rng.choice((a, b)), False, None))

    for says, asks, echoes, options in rng.sample(SINGLE, 10):
        who, slots = rng.choice((a, b)), pick(rng, options)
        session = rng.randrange(SESSIONS)
        question = rng.choice(asks).format(s=who, **slots)
        ask = ("single-hop", f"single-{SINGLE.index((says, asks, echoes, options))}", question)
        plan[session].append((fill(rng.choice(says), slots), who, True, ask))
        echo(echoes, slots, {session})
    for key, m in enumerate(rng.sample(MULTI, 5)):
        first_text, second_text, question, echoes, options = m
        who, slots = rng.choice((a, b)), pick(rng, options)
        first = rng.randrange(SESSIONS - 1)
        second = rng.randrange(first + 1, SESSIONS)
        ask = ("multi-hop", f"multi-{MULTI.index(m)}", question.format(s=who, **slots), key)
        plan[first].append((fill(first_text, slots), who, True, ("first", key)))
        plan[second].append((fill(second_text, slots), who, True, ask))
        echo(echoes, slots, {first, second})
    for t in rng.sample(TEMPORAL, 5):
        before, during, after, question, options = t
        who = rng.choice((a, b))
        slots = {**pick(rng, options), "rel": rng.choice(RELATIVE)}
        session = rng.randrange(1, SESSIONS - 1)
        ask = ("temporal", f"temporal-{TEMPORAL.index(t)}", question.format(s=who, **slots))
        plan[rng.randrange(0, session)].append((fill(before, slots), who, False, None))
        plan[session].append((fill(during, slots), who, True, ask))
        plan[rng.randrange(session + 1, SESSIONS)].append((fill(after, slots), who, False, None))
    for o in rng.sample(OPEN, 4):
        text, question, echoes = o
        who = rng.choice((a, b))
        session = rng.randrange(SESSIONS)
        ask = ("open-domain", f"open-{OPEN.index(o)}", question.format(s=who))
        plan[session].append((text, who, True, ask))
        echo(echoes, {}, {session})

    cid = f"E{index + 1}"
    turns: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    firsts: dict[int, str] = {}
    chatter = SMALL + MORE_SMALL
    pairs = [chatter[i : i + 2] for i in range(0, len(chatter) - 1, 2)]

    def say(session: int, speaker: str, text: str) -> str:
        tid = f"{cid}:{session + 1}:{len(turns) + 1}"
        turns.append({"id": tid, "session": session + 1, "date": days[session].isoformat(),
                      "speaker": speaker, "text": text})  # fmt: skip
        return tid

    for session in range(SESSIONS):
        events = plan[session]
        rng.shuffle(events)
        small = [line for pair in rng.sample(pairs, 8) for line in reversed(pair)]
        length = len(events) + len(small)
        at = set(rng.sample(range(length), len(events)))
        speaker = rng.choice((a, b))
        for step in range(length):
            if step not in at:
                say(session, speaker, small.pop())
                speaker = other(speaker)
                continue
            text, who, reply, ask = events.pop()
            tid = say(session, who, text)
            if ask is not None and ask[0] == "first":
                firsts[ask[1]] = tid
            elif ask is not None:
                kind, form, question = ask[:3]
                evidence = [firsts[ask[3]], tid] if kind == "multi-hop" else [tid]
                questions.append({"conversation": cid, "kind": kind, "form": form,
                                  "question": question, "evidence": evidence})  # fmt: skip
            if reply:
                say(session, other(who), rng.choice(REPLIES))
            speaker = other(who)
    return {"id": cid, "speakers": [a, b], "turns": turns}, questions


def main() -> int:
    return write(build(conversation, SEED), OUT)


if __name__ == "__main__":
    raise SystemExit(main())
