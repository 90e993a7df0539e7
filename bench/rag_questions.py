"""The question set of ``bench/rag.py`` and its scripted query rewriter.

Answerable questions come from sampled chunks: 3 or 4 of the chunk's most distinctive words (by
TF-IDF among the searched words of 4+ letters found in at most 5 % of the chunks), together held
by no other chunk, so the chunk that answers is known. Each word is then perturbed with the
seed: a paraphrase from ``PARAPHRASES`` (the documentation's term → the words a user might
type), a typo (two letters swapped or one dropped), or the other number (``statement`` ↔
``statements``); the words are shuffled into a question template. Unanswerable questions hold 2
or 3 words from ``OFF_TOPIC`` that no chunk holds in any form (some templates add the word
Python, so their retrieval is not empty).

The rewriter stands in for the model: it knows neither the answer nor the words a question was
made from. Its first rewrite maps the paraphrases of ``PARAPHRASES`` back to the documentation's
term (the table that made them: a model that knows the documentation's vocabulary) and corrects
each word absent from the corpus to its most frequent corpus word one edit away; its second (the
first when that changed nothing) keeps only the subject of the first: its searched words that
are not the templates' own.
"""

from __future__ import annotations

import math
import random
import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

RARE = 0.05
"""Share of the chunks a distinctive word is found in at most."""
PARAPHRASES: dict[str, tuple[str, ...]] = {
    "annotations": ("type hints",), "argument": ("input",), "arguments": ("inputs",),
    "assignment": ("binding",), "asynchronous": ("non blocking",), "attribute": ("field",),
    "attributes": ("fields",), "block": ("chunk",), "boolean": ("truth value",),
    "breakpoint": ("stop point",), "bytes": ("octets",), "callable": ("invocable",),
    "character": ("letter",), "characters": ("letters",), "classes": ("types",),
    "comparison": ("ordering test",), "comprehension": ("inline loop",),
    "constructor": ("initializer",), "coroutine": ("async function",),
    "debugger": ("step through tool",), "decimal": ("base ten",), "decorators": ("wrappers",),
    "default": ("fallback",), "delete": ("remove",), "deletion": ("removal",),
    "descriptor": ("managed property",), "dict": ("hashmap",), "dictionaries": ("hashmaps",),
    "dictionary": ("hashmap",), "division": ("dividing",), "empty": ("blank",),
    "equivalent": ("same as",), "exception": ("error",), "exceptions": ("errors",),
    "executed": ("run",), "exit": ("leave",), "expressions": ("formulas",),
    "float": ("real number",), "floating": ("decimal point",), "format": ("layout",),
    "frame": ("stack entry",), "function": ("routine",), "functions": ("routines",),
    "global": ("module level",), "hash": ("digest",), "hashable": ("usable as key",),
    "identifier": ("name",), "import": ("load",), "inheritance": ("subclassing",),
    "instance": ("object",), "instances": ("objects",), "integer": ("whole number",),
    "item": ("entry",), "iterable": ("loopable",), "iterator": ("cursor",),
    "keyword": ("reserved word",), "lambda": ("anonymous function",), "length": ("size",),
    "literals": ("constants",), "loop": ("iteration",), "mapping": ("associative array",),
    "match": ("switch",), "membership": ("containment",), "metaclass": ("class factory",),
    "method": ("member function",), "methods": ("member functions",),
    "mutable": ("changeable",), "namespace": ("symbol table",),
    "nonlocal": ("enclosing variable",), "operator": ("symbol",), "operators": ("symbols",),
    "overridden": ("redefined",), "override": ("redefine",), "parameter": ("formal argument",),
    "pattern": ("template",), "precision": ("accuracy",), "print": ("output",),
    "raise": ("throw",), "raised": ("thrown",), "raises": ("throws",), "range": ("span",),
    "scope": ("visibility",), "sequence": ("ordered collection",), "slice": ("subrange",),
    "stack": ("call chain",), "statements": ("instructions",), "string": ("text",),
    "strings": ("texts",), "subclass": ("derived class",), "suite": ("code block",),
    "syntax": ("grammar",), "target": ("destination",), "traceback": ("stack trace",),
    "tuple": ("immutable list",), "unicode": ("text encoding",), "unpacking": ("destructuring",),
    "variable": ("var",), "variables": ("vars",), "yield": ("produce",),
}  # fmt: skip
OFF_TOPIC = (
    "sourdough", "croissant", "glacier", "tectonic", "saxophone", "photosynthesis",
    "mitochondria", "marathon", "volcano", "avalanche", "giraffe", "tulip", "orchestra",
    "cathedral", "espresso", "lasagna", "hurricane", "penguin", "asteroid", "violin", "ballet",
    "wetland", "pottery", "origami", "kayak", "vaccine", "dinosaur", "carpentry", "tornado",
    "rainforest", "archipelago", "caramel", "saffron", "meteorite", "canoe", "fjord", "lichen",
    "quartz", "sonnet", "sculpture", "trombone", "yoga", "zucchini", "cinnamon", "basalt",
    "monsoon", "plankton", "nebula", "falcon", "walnut", "harpsichord", "tapestry", "cactus",
)  # fmt: skip
TEMPLATES = (
    "How do {} work?",
    "What does the documentation say about {}?",
    "Explain {} in Python.",
    "{}: what happens?",
    "Where is {} described?",
    "Can Python handle {}?",
)
_LONG_WORD = re.compile(r"[A-Za-z]{4,}")
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True)
class Question:
    """A question and the index of the chunk that answers it (None: no chunk does)."""

    text: str
    answer: int | None


def words(text: str) -> list[str]:
    """The lower-cased words of ``text`` (letters and digits, as FTS5's unicode61 cuts them)."""
    return _WORD.findall(text.lower())


def _listed(chosen: Sequence[str]) -> str:
    return " and ".join(chosen) if len(chosen) < 3 else f"{', '.join(chosen[:-1])} and {chosen[-1]}"


def _perturbed(word: str, rng: random.Random) -> str:
    roll = rng.random()
    if word in PARAPHRASES and roll < 0.5:
        return rng.choice(PARAPHRASES[word])
    if roll < 0.2 and len(word) >= 6:
        at = rng.randrange(1, len(word) - 2)
        if rng.random() < 0.5:
            return word[:at] + word[at + 1] + word[at] + word[at + 2 :]
        return word[:at] + word[at + 1 :]
    if roll < 0.4 and not word.endswith(("ss", "ed", "ing", "ly")):
        return word[:-1] if word.endswith("s") else f"{word}s"
    return word


def answerable(
    texts: Sequence[str], count: int, searched: Callable[[str], bool], rng: random.Random
) -> list[Question]:
    """Up to ``count`` questions, each answered by one chunk of ``texts`` (sampled), made of
    words for which ``searched`` holds."""
    held = [set(_LONG_WORD.findall(text.lower())) for text in texts]
    frequency = Counter(word for chunk in held for word in chunk)
    holders: dict[str, set[int]] = {}
    for number, chunk in enumerate(held):
        for word in chunk:
            holders.setdefault(word, set()).add(number)
    total, found, seen = len(texts), [], set()
    for number in rng.sample(range(total), total):
        counts = Counter(_LONG_WORD.findall(texts[number].lower()))
        weight = {w: n * math.log(total / frequency[w]) for w, n in counts.items()}
        rare = (w for w in counts if frequency[w] <= RARE * total and searched(w))
        pool = sorted(rare, key=weight.__getitem__)
        pool = sorted(pool[-8:])
        if len(pool) < 3:
            continue
        chosen = rng.sample(pool, min(len(pool), rng.choice((3, 4))))
        if len(set.intersection(*(holders[w] for w in chosen))) > 1:
            continue
        phrased = [_perturbed(word, rng) for word in chosen]
        rng.shuffle(phrased)
        text = rng.choice(TEMPLATES).format(_listed(phrased))
        if text not in seen:
            seen.add(text)
            found.append(Question(text, number))
        if len(found) == count:
            break
    return found


def unanswerable(
    count: int, absent: Callable[[str], bool], rng: random.Random, taken: set[str]
) -> list[Question]:
    """``count`` questions of ``OFF_TOPIC`` words for which ``absent`` holds, none in ``taken``."""
    pool = [word for word in OFF_TOPIC if absent(word)]
    found: list[Question] = []
    while len(found) < count:
        text = rng.choice(TEMPLATES).format(_listed(rng.sample(pool, rng.choice((2, 3)))))
        if text not in taken:
            taken.add(text)
            found.append(Question(text, None))
    return found


class Rewriter:
    """The scripted rewriter (see the module's docstring); ``vocabulary`` counts the chunks
    holding each corpus word."""

    def __init__(self, vocabulary: Counter[str], searched: Callable[[str], bool]) -> None:
        self.vocabulary, self.searched = vocabulary, searched
        self.framing = {word for template in TEMPLATES for word in words(template)}
        self.terms = {paraphrase: term for term, used in PARAPHRASES.items() for paraphrase in used}
        longest_first = sorted(self.terms, key=len, reverse=True)
        self.paraphrase = re.compile(r"\b(" + "|".join(map(re.escape, longest_first)) + r")\b")

    def corrected(self, word: str) -> str:
        """``word``, or the most frequent corpus word one edit away when the corpus lacks it."""
        if word in self.vocabulary or len(word) < 4 or not word.isalpha():
            return word
        splits = [(word[:at], word[at:]) for at in range(len(word) + 1)]
        letters = string.ascii_lowercase
        edits = {a + b[1:] for a, b in splits if b}
        edits |= {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
        edits |= {a + c + b[1:] for a, b in splits if b for c in letters}
        edits |= {a + c + b for a, b in splits for c in letters}
        known = [edit for edit in edits if edit in self.vocabulary]
        return max(sorted(known), key=self.vocabulary.__getitem__) if known else word

    def first(self, question: str) -> list[str]:
        mapped = self.paraphrase.sub(lambda found: self.terms[found.group(1)], question.lower())
        return [self.corrected(word) for word in words(mapped)]

    def __call__(self, question: str, tried: Sequence[str]) -> str:
        """The next query for ``question`` after the queries ``tried`` (the question first)."""
        first = self.first(question)
        if len(tried) < 2 and first != words(question):
            return " ".join(first)
        subject = [w for w in first if self.searched(w) and w not in self.framing]
        return " ".join(subject or first)
