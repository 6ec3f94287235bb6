"""Word stems for the stems index and for queries, the language picked per word by script.

Cyrillic words are stemmed as Russian; Latin words by each of the store's Latin stemmers
(English by default; several at once, e.g. English and Spanish, give every word one stem
per language). Other scripts and numbers are left to the words index. The `signature`
names the stemmer version and the choices: the stems index records the one it was built
with, and a different one rebuilds it instead of mixing stems of two analyzers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import version

import snowballstemmer

WORD = re.compile(r"\w+")
CYRILLIC = re.compile(r"[\u0400-\u04ff]")
LATIN = re.compile(r"[a-z\u00c0-\u024f]", re.IGNORECASE)
DEFAULT_LATIN = ("english",)
_CACHE_WORDS = 200_000


def latin_choices(text: str) -> tuple[str, ...]:
    """`english,spanish` as a checked tuple of Snowball algorithm names."""
    names = tuple(dict.fromkeys(name.strip().lower() for name in text.split(",") if name.strip()))
    known = set(snowballstemmer.algorithms())
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(
            f"unknown stemmer {', '.join(unknown)}; Snowball has {', '.join(sorted(known))}"
        )
    return names or DEFAULT_LATIN


@cache
def _stemmer(language: str) -> snowballstemmer.stemmer:
    return snowballstemmer.stemmer(language)


@cache
def _snowball_version() -> str:
    # Read once: reading a package's metadata costs milliseconds, and every search asks.
    return version("snowballstemmer")


@dataclass(frozen=True)
class Analyzer:
    latin: tuple[str, ...] = DEFAULT_LATIN
    _memo: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def signature(self) -> str:
        return (
            f"snowballstemmer {_snowball_version()}; cyrillic=russian; latin={'+'.join(self.latin)}"
        )

    def word_stems(self, word: str) -> tuple[str, ...]:
        """The stems of one word (lowercased); empty for a word no stemmer takes."""
        folded = word.lower()
        found = self._memo.get(folded)
        if found is not None:
            return found
        if CYRILLIC.search(folded):
            stems: tuple[str, ...] = (_stemmer("russian").stemWord(folded),)
        elif LATIN.search(folded):
            stems = tuple(dict.fromkeys(_stemmer(name).stemWord(folded) for name in self.latin))
        else:
            stems = ()
        if len(self._memo) < _CACHE_WORDS:
            self._memo[folded] = stems
        return stems

    def stems(self, text: str) -> str:
        """The text's stems, space-separated, for the stems index."""
        out: list[str] = []
        for word in WORD.findall(text):
            out.extend(self.word_stems(word))
        return " ".join(out)
