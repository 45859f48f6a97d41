"""A varied set of chat prompts, made offline, for distilling a draft from a chat target.

What a draft for a chat model must predict is the target's own answers, so the training data is the
target answering questions. The questions come from templates filled with topics: facts, how things
work, lists and tips, comparisons, writing, code and arithmetic, the kinds of request a chat model is
asked. ``prompt_set(n, seed, questions)`` draws ``n`` distinct questions of a named set deterministically;
``split`` holds out a fraction of them by a hash of their text, so held-out prompts are never trained on.
``EVAL_PROMPTS`` are written by hand, in no template's words (facts, explanations, lists, code,
arithmetic, writing): the held-out chat prompts on which the shipped draft's tau is measured.

There are three named sets (``QUESTION_SETS``). ``templates-1``, the chat recipe's default, is the set the
shipped draft model and the first four feature heads were trained on, kept byte for byte (the same questions
in the same order for every seed) so their reports stay reproducible: ~2,300 questions, nearly all "What is
X?", "Explain X in simple terms." and the like. ``templates-2`` is ``templates-1`` plus families phrased the
way people ask a small chat assistant, many more distinct questions: how things work ("How does a dam
work?", "How does a thermos keep drinks hot?"), why and what causes (hand-written: "Why is the ocean
salty?"), how-to, people and historical events, benefits and pros and cons, definitions of words and terms,
and "Name three ..." / "How many ...?" questions. It was added because the benchmark's explanation questions
(``specviz.bench.prompts.CHAT_PROMPTS["explain"]``) were the feature drafter's weakest category and no
template phrased a question that way; the feature recipe's default since the fifth head. No question of
either set is one the benchmark or ``EVAL_PROMPTS`` measures, and the new families hold no near-copy of one
either (no seasons, thunder, refrigerators, autumn leaves, sky colour, airplanes, spiders' legs, ...).
``templates-3`` is ``templates-2`` (in its order, so its cached answers are read) plus ~4,400 questions of
new families, because the fifth head's agreement on its own training answers is nine points above the
held-out one: it runs short of distinct questions, not of capacity. Animals, places, inventions and books,
short facts, ways to reach a goal, lists, cooking, self-improvement, advice, translations, writing forms
and silly rhymes, more code and Python questions, science questions and arithmetic asked as people ask it.
None of its new questions begins with the first four words of a measured or example prompt (but "Write a
Python function", ``templates-1``'s own family): what the benchmark and ``EVAL_PROMPTS`` ask stays in
words no template uses.

The topic lists, the hand-written questions and ``EVAL_PROMPTS`` are data: ``chat_prompts.json`` beside
this module (shipped as package data), loaded once at import; pairs (comparisons, characters, emails) are
tuples as before.
"""

from __future__ import annotations

import hashlib
import json
import random
from importlib import resources


def _load() -> dict[str, tuple]:
    """The lists of ``chat_prompts.json`` as tuples (a pair's two strings as a tuple too)."""
    text = resources.files(__package__).joinpath("chat_prompts.json").read_text(encoding="utf-8")
    return {k: tuple(tuple(x) if isinstance(x, list) else x for x in v) for k, v in json.loads(text).items()}


_DATA = _load()
CONCEPTS: tuple[str, ...] = _DATA["concepts"]
COUNTRIES: tuple[str, ...] = _DATA["countries"]
ACTIVITIES: tuple[str, ...] = _DATA["activities"]
THINGS: tuple[str, ...] = _DATA["things"]
COMPARISONS: tuple[tuple[str, str], ...] = _DATA["comparisons"]
CODE_TASKS: tuple[str, ...] = _DATA["code_tasks"]
CODE_QUESTIONS: tuple[str, ...] = _DATA["code_questions"]
SUBJECTS: tuple[str, ...] = _DATA["subjects"]
CHARACTERS: tuple[tuple[str, str], ...] = _DATA["characters"]  # (who, does)
EMAILS: tuple[tuple[str, str], ...] = _DATA["emails"]  # (to, about)
# held-out chat prompts written by hand (no template makes them)
EVAL_PROMPTS: tuple[str, ...] = _DATA["eval_prompts"]
# templates-2's families (hand-written questions are whole questions, the rest fill templates)
MACHINES: tuple[str, ...] = _DATA["machines"]  # machines, devices, body parts and systems: "How does X work?"
HOW_QUESTIONS: tuple[str, ...] = _DATA["how_questions"]
WHY_QUESTIONS: tuple[str, ...] = _DATA["why_questions"]
TASKS: tuple[str, ...] = _DATA["tasks"]  # "How do I X?"
PEOPLE: tuple[str, ...] = _DATA["people"]
EVENTS: tuple[str, ...] = _DATA["events"]
HABITS: tuple[str, ...] = _DATA["habits"]
CHOICES: tuple[str, ...] = _DATA["choices"]
WORDS: tuple[str, ...] = _DATA["words"]
TERMS: tuple[str, ...] = _DATA["terms"]
LIST_QUESTIONS: tuple[str, ...] = _DATA["list_questions"]  # "Name three ...", "How many ... are there in ...?"
# templates-3's families
ANIMALS: tuple[str, ...] = _DATA["animals"]  # plural: "What do X eat?"
LANDMARKS: tuple[str, ...] = _DATA["landmarks"]
INVENTIONS: tuple[str, ...] = _DATA["inventions"]
BOOKS: tuple[str, ...] = _DATA["books"]
SHORT_FACTS: tuple[str, ...] = _DATA["short_facts"]  # whole questions with a short definite answer
GOALS: tuple[str, ...] = _DATA["goals"]  # "What are three ways to X?"
CATEGORIES: tuple[str, ...] = _DATA["categories"]  # "Name five X."
DISHES: tuple[str, ...] = _DATA["dishes"]
SKILLS: tuple[str, ...] = _DATA["skills"]  # "How can I improve my X?"
DECISIONS: tuple[str, ...] = _DATA["decisions"]  # "What should I consider when X?"
PHRASES: tuple[str, ...] = _DATA["phrases"]
LANGUAGES: tuple[str, ...] = _DATA["languages"]
FORMS: tuple[str, ...] = _DATA["forms"]  # "What is a X? Give an example."
LIGHT_SUBJECTS: tuple[str, ...] = _DATA["light_subjects"]  # "Write a limerick about X."
MORE_CODE_TASKS: tuple[str, ...] = _DATA["more_code_tasks"]
CLASSES: tuple[tuple[str, str], ...] = _DATA["classes"]  # (thing, methods)
PYTHON_QUESTIONS: tuple[str, ...] = _DATA["python_questions"]
SCIENCE_QUESTIONS: tuple[str, ...] = _DATA["science_questions"]
QUESTION_SETS = ("templates-1", "templates-2", "templates-3")


def _templates(rng: random.Random) -> list[str]:
    """Every question the templates make (before sampling), in a fixed order."""
    out: list[str] = []
    for c in CONCEPTS:
        out += [
            f"What is {c}?",
            f"Explain {c} in simple terms.",
            f"What should everyone know about {c}?",
            f"Give me three interesting facts about {c}.",
            f"Why is {c} important?",
            f"Summarize what you know about {c} in a few sentences.",
            f"Explain {c} to a ten-year-old.",
            f"What are common misconceptions about {c}?",
        ]
    for country in COUNTRIES:
        out += [
            f"What is the capital of {country}?",
            f"What language is spoken in {country}?",
            f"Tell me about the history of {country}.",
            f"What is {country} famous for?",
            f"What food is {country} known for?",
        ]
    for a in ACTIVITIES:
        out += [
            f"Give me five tips for {a}.",
            f"What is the best way to get started with {a}?",
            f"What are common mistakes people make when {a}?",
            f"Make a simple plan for {a}.",
        ]
    for t in THINGS:
        n = rng.choice(("three", "four", "five", "six"))
        out += [f"List {n} {t}.", f"Name some {t} and say one thing about each."]
    for a, b in COMPARISONS:
        out += [f"What is the difference between {a} and {b}?", f"Compare {a} and {b}."]
    for task in CODE_TASKS:
        out += [f"Write a Python function that {task}.", f"Write a function that {task} and explain how it works."]
    out += list(CODE_QUESTIONS)
    for s in SUBJECTS:
        out += [f"Write a short poem about {s}.", f"Write a haiku about {s}.", f"Describe {s} in one paragraph."]
    for who, does in CHARACTERS:
        out += [f"Write a short story about {who} who {does}."]
    for to, about in EMAILS:
        out += [f"Write a short email to {to} about {about}."]
    for _ in range(120):
        a, b = rng.randint(2, 99), rng.randint(2, 99)
        out += [
            f"What is {a} + {b}?",
            f"What is {a} times {b}?",
            f"If I have {a + b} apples and give away {b}, how many do I have left?",
        ]
    for _ in range(30):
        km = rng.randint(2, 500)
        out += [
            f"Convert {km} kilometers to miles.",
            f"How many minutes are there in {rng.randint(2, 48)} hours?",
            f"What is {rng.choice((10, 15, 20, 25, 50))}% of {rng.randint(20, 900)}?",
        ]
    return out


def _more_templates() -> list[str]:
    """The questions ``templates-2`` adds to ``_templates``' (no randomness), in a fixed order."""
    out: list[str] = []
    for m in MACHINES:
        out += [
            f"How does {m} work?",
            f"Can you explain how {m} works?",
            f"Walk me through how {m} works, step by step.",
            f"I've always wondered how {m} works. Can you tell me?",
        ]
    out += list(HOW_QUESTIONS) + list(WHY_QUESTIONS)
    for t in TASKS:
        out += [
            f"How do I {t}?",
            f"What is the best way to {t}?",
            f"Can you give me step-by-step instructions to {t}?",
            f"What mistakes do people make when they try to {t}?",
        ]
    for p in PEOPLE:
        out += [f"Who was {p}?", f"What is {p} known for?", f"Why is {p} still remembered today?"]
        out += [f"Tell me about the life of {p}."]
    for e in EVENTS:
        out += [f"What happened during {e}?", f"Why was {e} important?", f"What led to {e}?"]
        out += [f"What were the consequences of {e}?"]
    for h in HABITS:
        out += [f"What are the benefits of {h}?", f"Why do people recommend {h}?", f"Is {h} really good for you?"]
    for c in CHOICES:
        out += [f"What are the pros and cons of {c}?", f"What are the advantages and disadvantages of {c}?"]
        out += [f"Is {c} a good idea?"]
    for w in WORDS:
        out += [
            f"What does the word {w} mean?",
            f"Use the word {w} in a sentence.",
            f"Where does the word {w} come from?",
        ]
    for t in TERMS:
        out += [
            f"What does the term {t} mean?",
            f"Can you define the term {t}?",
            f"Explain the term {t} in one sentence.",
        ]
    return out + list(LIST_QUESTIONS)


def _word_problems(rng: random.Random, n: int = 60) -> list[str]:
    """Arithmetic asked the other ways people ask it: minus, divided by, squares and roots, parts of a
    number, and small word problems (none with the benchmark's plus, times, half or travel phrasing)."""
    out: list[str] = []
    for _ in range(n):
        a, b, k = rng.randint(20, 999), rng.randint(2, 19), rng.randint(2, 40)
        name = rng.choice(("Maria", "Tom", "Aisha", "Ken", "Lena", "Omar", "Sofia", "Raj"))
        out += [
            f"What is {a} minus {rng.randint(1, a - 1)}?",
            f"What is {b * k} divided by {b}?",
            f"What is {rng.randint(2, 30)} squared?",
            f"What is the square root of {k * k}?",
            f"What is a {rng.choice(('third', 'quarter', 'fifth'))} of {rng.randint(2, 60) * 60}?",
            f"A box holds {b} eggs. How many eggs are in {k} boxes?",
            f"{name} has {a} stickers and gives {rng.randint(1, a - 1)} to a friend. How many are left?",
            f"There are {b * k} students split equally into {b} groups. How many are in each group?",
            f"A notebook costs {k} dollars. How much do {b} notebooks cost?",
            f"I read {k} pages a day. How many pages do I read in {b} weeks?",
        ]
    return out


def _third_templates() -> list[str]:
    """The questions ``templates-3`` adds to ``templates-2``'s, in a fixed order: animals, places,
    inventions, books, short facts, ways to reach a goal, lists, recipes, self-improvement, advice,
    translations, writing forms and limericks, more code and Python questions, science questions and
    arithmetic word problems."""
    out: list[str] = []
    for a in ANIMALS:
        out += [f"What do {a} eat?", f"Where do {a} live?", f"Tell me three facts about {a}."]
        out += [f"How long do {a} live?"]
    for x in LANDMARKS:
        out += [f"Where is {x}?", f"Why is {x} famous?", f"What can visitors see at {x}?"]
    for x in INVENTIONS:
        out += [f"Who invented {x}?", f"When was {x} invented?", f"How did {x} change the world?"]
    for x in BOOKS:
        out += [f"Who wrote {x}?", f"What is {x} about?"]
    out += list(SHORT_FACTS)
    for g in GOALS:
        out += [f"What can I do to {g}?", f"List five ways to {g}.", f"Give me some ideas to {g}."]
    for c in CATEGORIES:
        out += [f"List four {c}.", f"What are some {c}?"]
    for d in DISHES:
        out += [f"How do I make {d}?", f"What ingredients do I need for {d}?", f"Walk me through cooking {d}."]
    for s in SKILLS:
        out += [f"What is a good routine for working on my {s}?", f"What are some exercises to improve my {s}?"]
    for d in DECISIONS:
        out += [f"What are the most important things to think about before {d}?", f"Give me a checklist for {d}."]
    for i, p in enumerate(PHRASES):  # each phrase in two languages, in turn
        two = LANGUAGES[i % len(LANGUAGES)], LANGUAGES[(i + 5) % len(LANGUAGES)]
        out += [f"How do you say '{p}' in {lang}?" for lang in two]
    out += [f"Show me an example of a {f} and explain what makes it one." for f in FORMS]
    out += [f"Make up a silly rhyme about {s}." for s in LIGHT_SUBJECTS]
    for t in MORE_CODE_TASKS:
        out += [f"Write a Python function that {t}.", f"How would I write a function that {t} in Python?"]
    out += [f"Create a Python class that represents {thing}, with {methods}." for thing, methods in CLASSES]
    out += list(PYTHON_QUESTIONS) + list(SCIENCE_QUESTIONS)
    return out + _word_problems(random.Random(5678))


def _questions(questions: str) -> list[str]:
    """Every distinct question of the set named ``questions``, in a fixed order (before the shuffle)."""
    if questions not in QUESTION_SETS:
        raise ValueError(f"unknown question set {questions!r}; choose from {', '.join(QUESTION_SETS)}")
    made = _templates(random.Random(1234))
    if questions != "templates-1":
        made += _more_templates()
    return list(dict.fromkeys(made))


def prompt_set(n: int | None = None, seed: int = 0, questions: str = "templates-1") -> list[str]:
    """``n`` distinct questions of the set named ``questions`` (all of them when ``n`` is None), shuffled
    by ``seed``. ``templates-1`` is exactly the set the draft model and the first four heads were trained on.
    ``templates-3`` is ``templates-2`` in its own order followed by what it adds, shuffled apart, so a
    run on it begins with ``templates-2``'s questions in their order (and reads their cached answers)."""
    rng = random.Random(seed)
    unique = _questions(questions)
    rng.shuffle(unique)
    if questions == "templates-3":
        known = set(unique)
        added = [q for q in dict.fromkeys(_third_templates()) if q not in known]
        rng.shuffle(added)
        unique += added
    return unique if n is None else unique[:n]


def is_heldout(prompt: str, percent: float) -> bool:
    """Whether ``prompt`` falls in the held-out ``percent`` (by a hash of its text, stable across runs)."""
    h = int.from_bytes(hashlib.sha256(prompt.encode()).digest()[:4], "big")
    return h % 10000 < percent * 100


def split(prompts: list[str], heldout_percent: float) -> tuple[list[str], list[str]]:
    """``(train, heldout)`` by ``is_heldout``."""
    train = [p for p in prompts if not is_heldout(p, heldout_percent)]
    held = [p for p in prompts if is_heldout(p, heldout_percent)]
    return train, held
