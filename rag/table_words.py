"""The words of table questions: when two words are one word's forms, which words say nothing, and the
everyday words for what a header names. English and Russian.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

STOP = frozenset(
    "a an the of in on at by for with and or to from is are was were be been how many much what which who whose "
    "whom do does did have has had there their our we you they it its this that these those all any each every "
    "per than more less over under above below between total sum average mean number count list show name "
    "give tell me please most least largest smallest highest lowest biggest maximum minimum max min "
    "в во на по и или с со у из за для от до к о об что как какие какой какая какое каких каком каким какую "
    "кто сколько "
    "всего итого средний средняя среднее наибольший наименьший больше меньше более менее свыше ниже выше "
    "список перечисли покажи назови это эти все всех каждый каждого каждом есть был была были".split()
)
NAME_WORDS = frozenset("name names title client customer supplier vendor employee person product item "
                        "имя фио название наименование клиент сотрудник товар".split())
MONEY_WORDS = frozenset("amount total sum value price cost gross сумма итого стоимость цена".split())
ID_WORDS = frozenset("id no nr number num code ref № # код номер".split())
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def words_of(text: str) -> list[str]:
    """The text's words, lower case (letters and digits; "aren't" is "aren", "t")."""
    return [w.lower() for w in _WORD.findall(text)]


def same_word(a: str, b: str) -> bool:
    """Whether two lower-case words are forms of one word: in Latin script the same after an English
    ending ("offices"/"office", "invoiced"/"invoices", "salaries"/"salary"; not "Porto"/"ports"); in
    Cyrillic the same stem with another case ending ("Лиссабон"/"Лиссабоне", "статус"/"статусом")."""
    if a == b:
        return True
    if not (_CYRILLIC.search(a) and _CYRILLIC.search(b)):
        return bool(_stems(a) & _stems(b))
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    if len(short) <= 3 or len(long) - len(short) > 3:
        return False
    common = 0
    for x, y in zip(short, long, strict=False):
        if x != y:
            break
        common += 1
    # At most two letters of the shorter word and three of the longer after the common stem.
    return common >= 4 and len(short) - common <= 2 and len(long) - common <= 3


_CYRILLIC = re.compile(r"[а-яё]")
_ENDINGS = (("ies", "y"), ("es", ""), ("s", ""), ("ed", ""), ("d", ""), ("ing", ""), ("e", ""))


def _stems(word: str) -> set[str]:
    """A Latin-script word and what it is without one English ending (stems of three letters or more)."""
    found = {word}
    for ending, instead in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) + len(instead) >= 3:
            found.add(word[: len(word) - len(ending)] + instead)
    return found


def content_words(words: Sequence[str]) -> list[str]:
    """The words that mean something: no stop words, numbers or single letters."""
    return [w for w in words if w not in STOP and not w.isdigit() and len(w) >= 2]


ROW_NOUNS = frozenset(
    "rows records entries items lines people persons employees staff workers colleagues members everyone "
    "everybody anyone names "
    "строк строки записей записи позиций сотрудников сотрудника сотрудники работников человек людей все".split()
)
# Words that say nothing of what is asked: being in a row ("works in Lisbon"), time units, fillers.
FILLERS = frozenset(
    "work works working worked based located employed hired joined started start starts sit sits belong belongs "
    "get gets got give need want know see tell find ever still just yet already currently now today sent send "
    "issued month months monthly year years yearly annual annually day days across overall together entire "
    "whole amounts figure figures numbers value values one ones each every some only also "
    "работает работают работал работала числится числятся находится месяц год "
    "before after since until prior from not outside except excluding including aren isn wasn weren haven hasn "
    "don doesn didn never break down breakdown split group grouped сейчас всё ещё уже после кроме вне".split()
)
# Everyday words for what a column's header names (a header word -> words a question may use instead).
SYNONYMS = {
    "salary": {"pay", "payroll", "wage", "wages", "earn", "earns", "earning", "earnings", "зарплата", "оклад"},
    "amount": {"value", "sum", "invoiced", "owes", "owed", "сумма", "стоимость"},
    "employee": {"staff", "people", "person", "worker", "colleague", "сотрудник", "работник"},
    "status": {"state", "статус"},
    "date": {"when", "дата"},
    "office": {"site", "location", "city", "офис", "город"},
    "department": {"team", "unit", "отдел"},
    "client": {"customer", "клиент"},
    "country": {"страна"},
}


def header_words(column: str) -> list[str]:
    """A header's words, with the everyday words for them."""
    words = content_words(words_of(column))
    return words + [s for w in words for k, syn in SYNONYMS.items() if same_word(w, k) for s in syn]


# Words that turn a named value into its opposite ("not paid", "aren't paid", "outside Portugal").
NOT_WORDS = frozenset({"not", "no", "non", "except", "excluding", "outside", "aren", "isn", "wasn", "weren",
                       "haven", "hasn", "don", "doesn", "didn", "never", "не", "кроме", "вне"})
