"""A varied set of chat prompts, made offline, for distilling a draft from a chat target.

What a draft for a chat model must predict is the target's own answers, so the training data is the
target answering questions. The questions come from templates filled with topics: facts, how things
work, lists and tips, comparisons, writing, code and arithmetic, the kinds of request a chat model is
asked. ``prompt_set(n, seed)`` draws ``n`` distinct questions deterministically; ``split`` holds out
a fraction of them by a hash of their text, so held-out prompts are never trained on.
``EVAL_PROMPTS`` are written by hand, in no template's words: the held-out chat prompts on which the
shipped draft is measured.
"""
from __future__ import annotations

import hashlib
import random

CONCEPTS = (
    "photosynthesis", "gravity", "inflation", "the water cycle", "black holes", "vaccines", "democracy",
    "machine learning", "the immune system", "climate change", "supply and demand", "electricity", "DNA",
    "the stock market", "volcanoes", "earthquakes", "the internet", "blockchain", "evolution", "plate tectonics",
    "the French Revolution", "the Roman Empire", "the Renaissance", "the Industrial Revolution", "World War I",
    "the Cold War", "the printing press", "antibiotics", "nuclear energy", "solar power", "wind turbines",
    "the human heart", "sleep", "meditation", "compound interest", "credit scores", "recycling", "coral reefs",
    "rainforests", "the moon landing", "the speed of light", "quantum computing", "encryption", "cloud computing",
    "social media", "the Olympic Games", "jazz music", "impressionist painting", "the Great Wall of China",
    "the pyramids of Egypt", "honey bees", "migration of birds", "the ozone layer", "tides", "rainbows",
    "magnets", "batteries", "the placebo effect", "habits", "procrastination", "time management", "public speaking",
    "budgeting", "healthy eating", "protein", "vitamins", "hydration", "exercise", "yoga", "running",
    "the metric system", "prime numbers", "probability", "statistics", "algebra", "geometry", "calculus",
    "the Pythagorean theorem", "fractions", "percentages", "interest rates", "taxes", "insurance", "renewable energy",
    "electric cars", "airplanes", "rockets", "satellites", "GPS", "3D printing", "robots", "artificial intelligence",
    "search engines", "databases", "operating systems", "computer memory", "the CPU", "programming languages",
    "version control", "unit testing", "recursion", "sorting algorithms", "binary numbers", "the cloud",
    "passwords", "phishing", "composting", "gardening", "bread baking", "coffee", "tea", "chocolate",
    "the Amazon river", "the Sahara desert", "Mount Everest", "the Pacific Ocean", "Antarctica", "the Moon",
    "Mars", "Jupiter", "the Sun", "stars", "galaxies", "the Big Bang", "dinosaurs", "fossils", "whales",
    "elephants", "dogs", "cats", "octopuses", "ants", "friendship", "leadership", "teamwork", "negotiation",
    "learning a new language", "reading", "writing a resume", "job interviews", "starting a business",
    "marketing", "customer service", "e-commerce", "the scientific method", "critical thinking", "memory",
    "emotions", "stress", "happiness", "music theory", "the guitar", "the piano", "photography", "chess",
    "football", "basketball", "tennis", "cycling", "swimming", "hiking", "camping", "travel", "maps",
)
COUNTRIES = (
    "France", "Germany", "Italy", "Spain", "Portugal", "Japan", "China", "India", "Brazil", "Argentina", "Canada",
    "Mexico", "Australia", "Egypt", "Kenya", "Nigeria", "South Africa", "Russia", "Sweden", "Norway", "Finland",
    "Poland", "Greece", "Turkey", "Iran", "Thailand", "Vietnam", "Indonesia", "Peru", "Chile", "Colombia",
    "Ireland", "the Netherlands", "Belgium", "Switzerland", "Austria", "Denmark", "New Zealand", "South Korea",
    "Morocco",
)
ACTIVITIES = (
    "studying for exams", "learning to code", "saving money", "sleeping better", "staying focused", "cooking at home",
    "running a marathon", "losing weight", "reducing stress", "writing an essay", "giving a presentation",
    "traveling on a budget", "keeping a plant alive", "making friends in a new city", "working from home",
    "learning to swim", "training a puppy", "organizing a closet", "planning a wedding", "buying a used car",
    "preparing for a job interview", "staying motivated", "reading more books", "drinking more water",
    "waking up early", "taking better photos", "reducing screen time", "learning to draw", "keeping a journal",
    "starting a garden", "moving to a new apartment", "hosting a dinner party", "protecting your privacy online",
)
THINGS = (
    "fruits high in vitamin C", "programming languages", "famous painters", "planets in the solar system",
    "renewable energy sources", "healthy breakfast ideas", "board games", "classic novels", "musical instruments",
    "uses for baking soda", "countries in South America", "ways to save energy at home", "mammals that live in the sea",
    "inventions of the 20th century", "common cognitive biases", "primary colors and what they mix into",
    "Greek gods", "elements on the periodic table", "kinds of clouds", "ways to reduce plastic waste",
    "Python data types", "sorting algorithms", "hobbies for introverts", "questions to ask in an interview",
    "things to pack for a beach trip", "vegetables that grow well in pots", "tips for writing clean code",
    "signs of dehydration", "benefits of walking", "famous scientists",
)
COMPARISONS = (
    ("a virus", "a bacterium"), ("weather", "climate"), ("a list", "a tuple in Python"), ("speed", "velocity"),
    ("an alligator", "a crocodile"), ("stocks", "bonds"), ("RAM", "storage"), ("a comet", "an asteroid"),
    ("TCP", "UDP"), ("a democracy", "a republic"), ("baking soda", "baking powder"), ("affect", "effect"),
    ("HTML", "CSS"), ("a latte", "a cappuccino"), ("a frog", "a toad"), ("a credit card", "a debit card"),
    ("mitosis", "meiosis"), ("a simile", "a metaphor"), ("AC", "DC current"), ("a lake", "a pond"),
    ("Python", "JavaScript"), ("a hurricane", "a tornado"), ("renting", "buying a house"), ("tea", "coffee"),
    ("machine learning", "deep learning"), ("a compiler", "an interpreter"), ("SQL", "NoSQL databases"),
)
CODE_TASKS = (
    "reverses a string", "checks whether a number is prime", "returns the factorial of n",
    "computes the nth Fibonacci number", "counts the vowels in a string", "finds the largest number in a list",
    "removes duplicates from a list", "checks whether a word is a palindrome", "sums the digits of a number",
    "converts Celsius to Fahrenheit", "merges two sorted lists", "counts how often each word appears in a text",
    "returns the average of a list of numbers", "checks whether two strings are anagrams",
    "flattens a nested list", "finds the second largest number in a list", "capitalizes every word in a sentence",
    "reads a file and returns its number of lines", "checks whether a year is a leap year",
    "returns the greatest common divisor of two numbers", "sorts a list of dictionaries by a key",
    "generates a random password", "converts a binary string to an integer", "returns the squares of 1 to n",
    "implements binary search", "validates an email address", "transposes a matrix", "rotates a list by k places",
)
CODE_QUESTIONS = (
    "How do I read a CSV file in Python?", "How do I sort a dictionary by value in Python?",
    "What does the Python keyword yield do?", "What is a lambda function in Python?",
    "How do I handle exceptions in Python?", "What is a class in Python?", "How do list comprehensions work?",
    "What is the difference between == and is in Python?", "How do I make an HTTP request in Python?",
    "What is a decorator in Python?", "How do I write a for loop in JavaScript?", "What is a SQL JOIN?",
    "How do I create a virtual environment in Python?", "What does git rebase do?", "What is Big O notation?",
    "How do I reverse a list in Python?", "What is a REST API?", "What is recursion? Give an example.",
)
SUBJECTS = (
    "the sea", "autumn", "a rainy day", "the city at night", "a cat", "friendship", "the mountains", "coffee",
    "the first day of school", "a garden", "the stars", "a long journey", "winter", "a lighthouse", "a library",
    "the ocean", "spring", "a robot", "an old tree", "a train ride",
)
CHARACTERS = (
    ("a young inventor", "builds a flying machine"), ("a lost dog", "finds its way home"),
    ("a shy student", "joins the school band"), ("an old sailor", "sees a whale for the first time"),
    ("a robot", "learns to paint"), ("a baker", "enters a cooking contest"), ("a girl", "discovers a secret door"),
    ("a knight", "befriends a dragon"), ("a farmer", "finds a golden egg"), ("an astronaut", "lands on a new planet"),
)
EMAILS = (
    ("my manager", "taking a day off"), ("a teacher", "a missed assignment"), ("my landlord", "a broken heater"),
    ("a customer", "a delayed order"), ("my team", "a meeting next week"), ("a friend", "a birthday party"),
)


def _templates(rng: random.Random) -> list[str]:
    """Every question the templates make (before sampling), in a fixed order."""
    out: list[str] = []
    for c in CONCEPTS:
        out += [f"What is {c}?", f"Explain {c} in simple terms.", f"What should everyone know about {c}?",
                f"Give me three interesting facts about {c}.", f"Why is {c} important?",
                f"Summarize what you know about {c} in a few sentences.", f"Explain {c} to a ten-year-old.",
                f"What are common misconceptions about {c}?"]
    for country in COUNTRIES:
        out += [f"What is the capital of {country}?", f"What language is spoken in {country}?",
                f"Tell me about the history of {country}.", f"What is {country} famous for?",
                f"What food is {country} known for?"]
    for a in ACTIVITIES:
        out += [f"Give me five tips for {a}.", f"What is the best way to get started with {a}?",
                f"What are common mistakes people make when {a}?", f"Make a simple plan for {a}."]
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
        out += [f"What is {a} + {b}?", f"What is {a} times {b}?",
                f"If I have {a + b} apples and give away {b}, how many do I have left?"]
    for _ in range(30):
        km = rng.randint(2, 500)
        out += [f"Convert {km} kilometers to miles.", f"How many minutes are there in {rng.randint(2, 48)} hours?",
                f"What is {rng.choice((10, 15, 20, 25, 50))}% of {rng.randint(20, 900)}?"]
    return out


def prompt_set(n: int | None = None, seed: int = 0) -> list[str]:
    """``n`` distinct template questions (all of them when ``n`` is None), shuffled by ``seed``."""
    rng = random.Random(seed)
    unique = list(dict.fromkeys(_templates(random.Random(1234))))
    rng.shuffle(unique)
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


# Held-out chat prompts written by hand (no template makes them): facts, explanations, lists, code,
# arithmetic, writing. The shipped draft's tau is measured on these.
EVAL_PROMPTS = (
    "Why is the sky blue?",
    "Who painted the Mona Lisa, and when?",
    "How do airplanes stay in the air?",
    "List the seven continents.",
    "Give me a recipe for pancakes.",
    "Write a Python function that returns the sum of the even numbers in a list.",
    "What is 12 multiplied by 11?",
    "What are the main causes of the Great Depression?",
    "Write a limerick about a programmer.",
    "How can I improve my handwriting?",
    "What is the boiling point of water in Fahrenheit?",
    "Explain what a neural network is.",
    "What should I consider when adopting a pet?",
    "Translate 'good morning' into Spanish, French and German.",
    "How many legs does a spider have?",
    "What is a haiku? Give an example.",
)
