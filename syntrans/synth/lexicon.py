"""The source vocabulary by part of speech, and the invented target lexicon.

The source side is a small English-like vocabulary (plain lowercase ASCII words; a few long ones
such as ``representative`` so that BPE has something to split). The target lexicon maps every
source word to one invented word, one to one. It is derived from SHA-256 digests of the source
words, so it is the same for every seed, every run and every Python process (no ``hash()``, no
global random state): a target word is a string of consonant-vowel syllables, roughly one
syllable per three source letters; a digest that would give a word already taken (or a source
word) is redrawn with the next salt. The full stop maps to itself.
"""
from __future__ import annotations

import hashlib

DETERMINERS = ["the", "every", "some", "this", "each", "no"]
NOUNS = [
    "dog", "cat", "bird", "horse", "farmer", "teacher", "student", "doctor", "child", "king",
    "queen", "baker", "sailor", "painter", "girl", "boy", "river", "garden", "house", "table",
    "window", "letter", "book", "song", "apple", "bridge", "forest", "village", "mountain",
    "market", "photographer", "administrator", "neighbourhood", "representative", "telescope",
    "umbrella", "helicopter", "grandmother", "instrument", "mathematician",
]
ADJECTIVES = [
    "big", "small", "old", "young", "red", "green", "happy", "tired", "quiet", "loud", "clever",
    "brave", "strange", "ancient", "beautiful", "dangerous", "mysterious", "extraordinary",
    "comfortable", "wooden",
]
TRANSITIVE_VERBS = [
    "sees", "likes", "chases", "finds", "helps", "follows", "watches", "carries", "remembers",
    "admires", "misunderstands", "photographs",
]
INTRANSITIVE_VERBS = ["sleeps", "laughs", "sings", "runs", "waits", "smiles", "disappears", "complains"]
PREPOSITIONS = ["in", "on", "with", "near", "behind", "under", "from", "without"]
CONJUNCTIONS = ["and", "or"]
RELATIVIZERS = ["that"]
PUNCTUATION = ["."]

#: part-of-speech tag (the preterminal label) -> the words it may carry
WORDS_BY_TAG: dict[str, list[str]] = {
    "DT": DETERMINERS,
    "NN": NOUNS,
    "JJ": ADJECTIVES,
    "VB": TRANSITIVE_VERBS + INTRANSITIVE_VERBS,
    "IN": PREPOSITIONS,
    "CC": CONJUNCTIONS,
    "WDT": RELATIVIZERS,
    ".": PUNCTUATION,
}

SOURCE_VOCAB: list[str] = [w for words in WORDS_BY_TAG.values() for w in words]

_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"


def _syllables(word: str) -> int:
    return max(1, min(5, (len(word) + 1) // 3))


def _invent(word: str, salt: int) -> str:
    digest = hashlib.sha256(f"syntrans-lexicon:{word}:{salt}".encode("ascii")).digest()
    out = []
    for k in range(_syllables(word)):
        out.append(_CONSONANTS[digest[2 * k] % len(_CONSONANTS)])
        out.append(_VOWELS[digest[2 * k + 1] % len(_VOWELS)])
    if digest[-1] % 3 == 0:  # a closing consonant now and then, for variety
        out.append("n")
    return "".join(out)


def build_lexicon(vocab: list[str] = SOURCE_VOCAB) -> dict[str, str]:
    """Map each source word to a distinct invented target word (deterministic, seed-free)."""
    if len(set(vocab)) != len(vocab):
        raise ValueError("the source vocabulary lists a word twice")
    taken = set(vocab)  # target words never coincide with source words
    lexicon: dict[str, str] = {}
    for word in vocab:
        if word in PUNCTUATION:
            lexicon[word] = word
            continue
        salt = 0
        while _invent(word, salt) in taken:
            salt += 1
        lexicon[word] = _invent(word, salt)
        taken.add(lexicon[word])
    return lexicon


#: the source -> target word map used by :mod:`syntrans.synth.transduce`
LEXICON: dict[str, str] = build_lexicon()


def translate_word(word: str, lexicon: dict[str, str] = LEXICON) -> str:
    """The target image of a source word; ValueError for a word outside the vocabulary."""
    try:
        return lexicon[word]
    except KeyError:
        raise ValueError(f"{word!r} is not in the synthetic source vocabulary") from None
