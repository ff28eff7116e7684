"""Which language a passage or a question is written in, and its words as the keyword index stems them.

Detection is offline and cheap enough to run on every passage: a text whose letters are mostly Cyrillic is
Russian; otherwise the Latin-script languages are told apart by their function words (the `stop-words`
package's lists, each word counting 1/n when n languages share it) and their own letters (ß, ñ, ł, ã …).
English wins whenever nothing points elsewhere, so an English question keeps English keyword search.
Stems come from the Snowball stemmers (`snowballstemmer`): Cyrillic words always with the Russian one,
Latin words with the stemmer of the text's language (English inside a Russian text).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

import snowballstemmer
import stop_words

# ISO 639-1 code -> (Snowball algorithm, stop-words list name, the language's English name)
LANGUAGES: dict[str, tuple[str, str, str]] = {
    "en": ("english", "english", "English"),
    "ru": ("russian", "russian", "Russian"),
    "de": ("german", "german", "German"),
    "fr": ("french", "french", "French"),
    "es": ("spanish", "spanish", "Spanish"),
    "it": ("italian", "italian", "Italian"),
    "pt": ("portuguese", "portuguese", "Portuguese"),
    "nl": ("dutch", "dutch", "Dutch"),
    "pl": ("polish", "polish", "Polish"),
}
DEFAULT = "en"
_LATIN = tuple(code for code in LANGUAGES if code != "ru")
_WORD = re.compile(r"\w+", re.UNICODE)
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
# Letters only one of the Latin languages writes (or nearly): each occurrence counts as one function word.
_OWN_LETTERS = {
    "de": "ßäöü",
    "es": "ñ¿¡",
    "pt": "ãõ",
    "pl": "ąćęłńśźż",
    "fr": "œûêëîç",
    "it": "ìò",
    "nl": "ĳ",
}
_LETTER_LANGUAGE = {letter: code for code, letters in _OWN_LETTERS.items() for letter in letters}
_OWN_LETTER = re.compile(f"[{''.join(_LETTER_LANGUAGE)}]")
_SAMPLE_CHARS = 4_000  # a passage's language shows in its first few thousand characters
_ENGLISH_PRIOR = 0.5  # a tie or a text with no cue at all stays English, as the index always treated it


# A sentence of each language, to ask whether a tokenizer reads it (an English-only one cuts its words up).
SAMPLES = {
    "ru": "Работники компании ежегодно получают оплачиваемый отпуск продолжительностью двадцать восемь дней.",
    "de": "Die Mitarbeiter erhalten jedes Jahr einen bezahlten Urlaub von achtundzwanzig Tagen.",
    "fr": "Les salariés de l'entreprise reçoivent chaque année un congé payé de vingt-huit jours.",
    "es": "Los empleados de la empresa reciben cada año unas vacaciones pagadas de veintiocho días.",
    "it": "I dipendenti dell'azienda ricevono ogni anno ferie retribuite di ventotto giorni.",
    "pt": "Os funcionários da empresa não perdem as férias pagas de trinta dias, que são um direito.",
    "nl": "De medewerkers van het bedrijf krijgen elk jaar een betaalde vakantie van achtentwintig dagen.",
    "pl": "Pracownicy firmy otrzymują co roku płatny urlop w wymiarze dwudziestu ośmiu dni.",
}


def name(code: str) -> str:
    """The language's English name ("Russian"), for prompts and messages."""
    return LANGUAGES.get(code, LANGUAGES[DEFAULT])[2]


# Question words the package's lists lack: a question opens with them ("Какова …", "Что делать …"), and a
# memo that repeats them is no more about the subject for it.
_QUESTION_WORDS = {"ru": frozenset("каков какова каково каковы делать сделать".split())}


@lru_cache(maxsize=None)
def stop_set(code: str) -> frozenset[str]:
    """The language's stop words (lower-case): the `stop-words` package's list and the question words it lacks."""
    listed = frozenset(w.lower() for w in stop_words.get_stop_words(LANGUAGES[code][1]))
    return listed | _QUESTION_WORDS.get(code, frozenset())


@lru_cache(maxsize=1)
def _cue_weights() -> dict[str, dict[str, float]]:
    """For each function word of the Latin languages, how much it says for each language that lists it."""
    holders: dict[str, list[str]] = {}
    for code in _LATIN:
        for word in stop_set(code):
            holders.setdefault(word, []).append(code)
    # English's list is long (1,300 words, many of them content words); a word only it lists says less. A word
    # several lists share is split evenly between them: halved for English too, it leant the other way, and
    # "Who approves my request to go to a conference?" (my, to, go: English and Polish) was read as Polish.
    return {w: {"en": 0.5} if cs == ["en"] else {c: 1.0 / len(cs) for c in cs} for w, cs in holders.items()}


def detect(text: str) -> str:
    """The ISO 639-1 code of the language `text` is most likely written in; "en" when nothing says otherwise."""
    sample = text[:_SAMPLE_CHARS]
    cyrillic = len(_CYRILLIC.findall(sample))
    # Most passages hold no Cyrillic letter at all: only then is counting all the letters worth nothing.
    if cyrillic and cyrillic * 2 >= sum(map(str.isalpha, sample)):
        return "ru"
    return _latin_language(sample)


def _latin_language(sample: str) -> str:
    cues = _cue_weights()
    score: Counter[str] = Counter({DEFAULT: _ENGLISH_PRIOR})
    lower = sample.lower()
    words = Counter(_WORD.findall(lower))
    for word in words.keys() & cues.keys():
        for code, weight in cues[word].items():
            score[code] += weight * words[word]
    for letter in _OWN_LETTER.findall(lower):
        score[_LETTER_LANGUAGE[letter]] += 1
    best = max(score.values())
    # Ties go to English first, then in LANGUAGES' order, so the same text always gets the same answer.
    return next(code for code in _LATIN if score[code] == best)


@lru_cache(maxsize=None)
def _stemmer(algorithm: str) -> snowballstemmer.stemmer:
    return snowballstemmer.stemmer(algorithm)


class Stems:
    """Turns words into Snowball stems for one language, remembering the stems it made (words repeat)."""

    def __init__(self, code: str) -> None:
        latin = "en" if code == "ru" else code
        self._latin = _stemmer(LANGUAGES.get(latin, LANGUAGES[DEFAULT])[0])
        self._russian = _stemmer("russian")
        self._made: dict[str, str] = {}

    def stem(self, word: str) -> str:
        """The stem of one lower-case word: Russian for Cyrillic, the text's language otherwise."""
        made = self._made.get(word)
        if made is None:
            if len(self._made) > 200_000:
                self._made.clear()
            stemmer = self._russian if _CYRILLIC.search(word) else self._latin
            # Snowball's Russian stemmer treats ё and е alike only when given е.
            made = self._made[word] = stemmer.stemWord(word.replace("ё", "е"))
        return made

    def words(self, words: Iterable[str]) -> list[str]:
        """Stems of lower-case words, in order."""
        return [self.stem(w) for w in words]


@lru_cache(maxsize=None)
def stems_for(code: str) -> Stems:
    """The shared stemmer of a language (its memory of stems made is capped)."""
    return Stems(code if code in LANGUAGES else DEFAULT)


def stemmed_text(text: str, code: str) -> str:
    """A passage's words as stems, space-separated, for the language-aware keyword index."""
    return " ".join(stems_for(code).words(w.lower() for w in _WORD.findall(text)))


def question_stems(text: str, code: str) -> list[str]:
    """The stems of a question's words that matter for ranking: its language's stop words left out."""
    words = [w.lower() for w in _WORD.findall(text)]
    stop = stop_set(code)
    kept = [w for w in words if w not in stop and (len(w) > 1 or w.isdigit())]
    return list(dict.fromkeys(stems_for(code).words(kept or words)))
