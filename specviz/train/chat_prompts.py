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
template phrased a question that way: the fifth head's set. No question of
any set is one the benchmark or ``EVAL_PROMPTS`` measures, and the new families hold no near-copy of one
either (no seasons, thunder, refrigerators, autumn leaves, sky colour, airplanes, spiders' legs, ...).
``templates-3``, the feature recipe's default and the shipped (seventh) head's set, is ``templates-2`` (in
its order, so its cached answers are read) plus ~4,400 questions of new families, because the fifth head's
agreement on its own training answers is nine points above the held-out one: it runs short of distinct
questions, not of capacity. Animals, places, inventions and books, short facts, ways to reach a goal,
lists, cooking, self-improvement, advice, translations, writing forms and silly rhymes, more code and
Python questions, science questions and arithmetic asked as people ask it. None of its new questions
begins with the first four words of a measured or example prompt (but "Write a Python function",
``templates-1``'s own family): what the benchmark and ``EVAL_PROMPTS`` ask stays in words no new
template uses.

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


def _fill(topics: tuple, *templates: str) -> list[str]:
    """Every topic in each of ``templates``, topic by topic (``{}`` marks the topic, or each string of a
    pair in turn)."""
    return [t.format(*x) if isinstance(x, tuple) else t.format(x) for x in topics for t in templates]


def _templates(rng: random.Random) -> list[str]:
    """Every question the templates make (before sampling), in a fixed order."""
    out = [
        *_fill(
            CONCEPTS,
            "What is {}?",
            "Explain {} in simple terms.",
            "What should everyone know about {}?",
            "Give me three interesting facts about {}.",
            "Why is {} important?",
            "Summarize what you know about {} in a few sentences.",
            "Explain {} to a ten-year-old.",
            "What are common misconceptions about {}?",
        ),
        *_fill(
            COUNTRIES,
            "What is the capital of {}?",
            "What language is spoken in {}?",
            "Tell me about the history of {}.",
            "What is {} famous for?",
            "What food is {} known for?",
        ),
        *_fill(
            ACTIVITIES,
            "Give me five tips for {}.",
            "What is the best way to get started with {}?",
            "What are common mistakes people make when {}?",
            "Make a simple plan for {}.",
        ),
    ]
    for t in THINGS:
        n = rng.choice(("three", "four", "five", "six"))
        out += [f"List {n} {t}.", f"Name some {t} and say one thing about each."]
    out += [
        *_fill(COMPARISONS, "What is the difference between {} and {}?", "Compare {} and {}."),
        *_fill(CODE_TASKS, "Write a Python function that {}.", "Write a function that {} and explain how it works."),
        *CODE_QUESTIONS,
        *_fill(SUBJECTS, "Write a short poem about {}.", "Write a haiku about {}.", "Describe {} in one paragraph."),
        *_fill(CHARACTERS, "Write a short story about {} who {}."),
        *_fill(EMAILS, "Write a short email to {} about {}."),
    ]
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
    return [
        *_fill(
            MACHINES,
            "How does {} work?",
            "Can you explain how {} works?",
            "Walk me through how {} works, step by step.",
            "I've always wondered how {} works. Can you tell me?",
        ),
        *HOW_QUESTIONS,
        *WHY_QUESTIONS,
        *_fill(
            TASKS,
            "How do I {}?",
            "What is the best way to {}?",
            "Can you give me step-by-step instructions to {}?",
            "What mistakes do people make when they try to {}?",
        ),
        *_fill(
            PEOPLE,
            "Who was {}?",
            "What is {} known for?",
            "Why is {} still remembered today?",
            "Tell me about the life of {}.",
        ),
        *_fill(
            EVENTS,
            "What happened during {}?",
            "Why was {} important?",
            "What led to {}?",
            "What were the consequences of {}?",
        ),
        *_fill(HABITS, "What are the benefits of {}?", "Why do people recommend {}?", "Is {} really good for you?"),
        *_fill(
            CHOICES,
            "What are the pros and cons of {}?",
            "What are the advantages and disadvantages of {}?",
            "Is {} a good idea?",
        ),
        *_fill(
            WORDS, "What does the word {} mean?", "Use the word {} in a sentence.", "Where does the word {} come from?"
        ),
        *_fill(
            TERMS, "What does the term {} mean?", "Can you define the term {}?", "Explain the term {} in one sentence."
        ),
        *LIST_QUESTIONS,
    ]


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
    inventions, books, short facts, ways to reach a goal, lists, cooking, routines, advice, translations,
    writing forms and silly rhymes, more code and Python questions, science questions and arithmetic."""
    translations = [  # each phrase in two languages, in turn
        f"How do you say '{p}' in {lang}?"
        for i, p in enumerate(PHRASES)
        for lang in (LANGUAGES[i % len(LANGUAGES)], LANGUAGES[(i + 5) % len(LANGUAGES)])
    ]
    return [
        *_fill(
            ANIMALS, "What do {} eat?", "Where do {} live?", "Tell me three facts about {}.", "How long do {} live?"
        ),
        *_fill(LANDMARKS, "Where is {}?", "Why is {} famous?", "What can visitors see at {}?"),
        *_fill(INVENTIONS, "Who invented {}?", "When was {} invented?", "How did {} change the world?"),
        *_fill(BOOKS, "Who wrote {}?", "What is {} about?"),
        *SHORT_FACTS,
        *_fill(GOALS, "What can I do to {}?", "List five ways to {}.", "Give me some ideas to {}."),
        *_fill(CATEGORIES, "List four {}.", "What are some {}?"),
        *_fill(DISHES, "How do I make {}?", "What ingredients do I need for {}?", "Walk me through cooking {}."),
        *_fill(SKILLS, "What is a good routine for working on my {}?", "What are some exercises to improve my {}?"),
        *_fill(
            DECISIONS,
            "What are the most important things to think about before {}?",
            "Give me a checklist for {}.",
        ),
        *translations,
        *_fill(FORMS, "Show me an example of a {} and explain what makes it one."),
        *_fill(LIGHT_SUBJECTS, "Make up a silly rhyme about {}."),
        *_fill(MORE_CODE_TASKS, "Write a Python function that {}.", "How would I write a function that {} in Python?"),
        *_fill(CLASSES, "Create a Python class that represents {}, with {}."),
        *PYTHON_QUESTIONS,
        *SCIENCE_QUESTIONS,
        *_word_problems(random.Random(5678)),
    ]


def _parts(questions: str) -> list[list[str]]:
    """The set named ``questions`` as parts in a fixed order, each shuffled apart by ``prompt_set``:
    ``templates-1`` is one part, ``templates-2`` one part holding it and what it adds (kept so: its
    questions in the order its heads were trained on), ``templates-3`` that part and then what it adds."""
    if questions not in QUESTION_SETS:
        raise ValueError(f"unknown question set {questions!r}; choose from {', '.join(QUESTION_SETS)}")
    first = _templates(random.Random(1234))
    if questions == "templates-1":
        return [first]
    parts = [first + _more_templates()]
    if questions == "templates-3":
        parts.append(_third_templates())
    return parts


def prompt_set(n: int | None = None, seed: int = 0, questions: str = "templates-1") -> list[str]:
    """``n`` distinct questions of the set named ``questions`` (all of them when ``n`` is None), shuffled
    by ``seed`` part by part (``_parts``), a question kept where it first comes. ``templates-1`` is exactly
    the set the draft model and the first four heads were trained on; a run on ``templates-3`` begins with
    ``templates-2``'s questions in their order (and reads their cached answers)."""
    rng = random.Random(seed)
    unique: list[str] = []
    for part in _parts(questions):
        known = set(unique)
        added = [q for q in dict.fromkeys(part) if q not in known]
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
