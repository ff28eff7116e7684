"""The keyword index in languages other than English: Snowball stems per passage, and an old index upgraded."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from rag.lexical import LexicalIndex, LexicalRow
from tests.rag.russian_memos import MEMOS, QUESTIONS


def rows(texts: dict[str, str]) -> list[tuple[str, LexicalRow]]:
    return [(name, LexicalRow(name, name, None, None, 0, len(text), text)) for name, text in texts.items()]


def ranked(index: LexicalIndex, question: str, **kwargs) -> list[str]:
    return [r.chunk_id for r, _ in index.search("ws", question, k=5, **kwargs)]


def test_russian_questions_find_other_word_forms_before_memos_repeating_their_words(tmp_path):
    index = LexicalIndex(tmp_path / "lex.sqlite")
    index.add_rows("ws", rows(MEMOS))
    for question, memo, _ in QUESTIONS:
        assert ranked(index, question)[0] == memo, question
        # As English (Porter, exact Russian word forms only) the answering memo is never first.
        assert ranked(index, question, language="en")[:1] != [memo], question


def test_german_stems_in_the_index(tmp_path):
    index = LexicalIndex(tmp_path / "lex.sqlite")
    index.replace_document("ws", "reise.txt", [row for _, row in rows({
        "reise": "Dienstreisen werden vom Abteilungsleiter genehmigt; die Reisekosten erstattet die Buchhaltung.",
        "urlaub": "Urlaubsanträge gehen an die Personalabteilung, die über den Urlaub entscheidet.",
    })])
    assert ranked(index, "Wer genehmigt eine Dienstreise?") == ["reise"]
    assert index.languages("ws") == {"de": 2}


def test_english_passages_and_questions_stay_with_porter(tmp_path):
    index = LexicalIndex(tmp_path / "lex.sqlite")
    index.add_rows("ws", rows({"a": "Backups are stored on the office server every night.", **MEMOS}))
    assert ranked(index, "Where are backups stored?") == ["a"]
    assert index.languages("ws") == {"en": 1, "ru": len(MEMOS)}
    db = sqlite3.connect(tmp_path / "lex.sqlite")
    assert db.execute("SELECT count(*) FROM chunks_stems").fetchone()[0] == len(MEMOS)  # English is not stemmed twice


def test_deleted_and_replaced_passages_leave_no_stems(tmp_path):
    index = LexicalIndex(tmp_path / "lex.sqlite")
    index.add_rows("ws", rows(MEMOS))
    index.delete_document("ws", "otpusk.txt")
    index.add_rows("ws", rows({"sklad.txt": MEMOS["otpusk.txt"]}))  # the same chunk id, replaced
    assert "otpusk.txt" not in ranked(index, "Какова продолжительность ежегодного отпуска?")
    db = sqlite3.connect(tmp_path / "lex.sqlite")
    assert db.execute("SELECT count(*) FROM chunks_stems").fetchone()[0] == len(MEMOS) - 1
    assert db.execute("SELECT count(*) FROM chunk_language").fetchone()[0] == len(MEMOS) - 1


# The keyword index as Hearth wrote it before it kept languages.
OLD_SCHEMA = """
CREATE TABLE chunks (rowid INTEGER PRIMARY KEY, chunk_id TEXT NOT NULL UNIQUE, workspace TEXT NOT NULL,
    source TEXT NOT NULL, page INTEGER, heading TEXT, start INTEGER NOT NULL, "end" INTEGER NOT NULL, text TEXT NOT NULL);
CREATE INDEX chunks_by_source ON chunks (workspace, source);
CREATE VIRTUAL TABLE chunks_fts USING fts5(heading, text, content='chunks', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2');
CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, heading, text) VALUES (new.rowid, coalesce(new.heading, ''), new.text);
END;
CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, heading, text)
    VALUES ('delete', old.rowid, coalesce(old.heading, ''), old.text);
END;
"""


def test_an_index_from_before_languages_is_upgraded_in_place_when_opened(tmp_path):
    path = tmp_path / "lex.sqlite"
    db = sqlite3.connect(path)
    db.executescript(OLD_SCHEMA)
    with db:
        db.executemany('INSERT INTO chunks (chunk_id, workspace, source, page, heading, start, "end", text)'
                       " VALUES (?, 'ws', ?, NULL, NULL, 0, 1, ?)", [(n, n, t) for n, t in MEMOS.items()])
    db.close()
    index = LexicalIndex(path)
    assert index.upgraded == len(MEMOS)
    assert {r.ocr_confidence for r in index.all_rows("ws")} == {None}  # the column added: nothing was OCR'd
    for question, memo, _ in QUESTIONS:
        assert ranked(index, question)[0] == memo, question
    index.close()
    # An older Hearth writing into the upgraded index: its rows get their languages at the next opening.
    db = sqlite3.connect(path)
    with db:
        db.execute('INSERT INTO chunks (chunk_id, workspace, source, page, heading, start, "end", text)'
                   " VALUES ('late', 'ws', 'late.txt', NULL, NULL, 0, 1, 'Парковка для сотрудников платная.')")
    db.close()
    index = LexicalIndex(path)
    assert index.upgraded == 1
    assert ranked(index, "платной парковки")[0] == "late"
    assert LexicalIndex(path).upgraded == 0


def test_language_counts_are_per_workspace(tmp_path: Path):
    index = LexicalIndex(tmp_path / "lex.sqlite")
    index.add_rows("ws", rows(MEMOS))
    assert index.languages("other") == {}


def test_a_verbs_forms_and_a_words_derivations_meet_at_their_root(tmp_path):
    # Snowball leaves them apart ("передава" / "переда", "паркова" / "парковк"); the first six letters join them.
    index = LexicalIndex(tmp_path / "lex.sqlite")
    index.add_rows("ws", rows({
        "sick": "Больничные листы. Электронный больничный лист передаётся в отдел кадров после выздоровления.",
        "approval": "Лист согласования. Кому передавать лист согласования договора? Лист согласования передают юристу.",
        "parking": "Парковка. Парковочные места закреплены за руководителями; остальным сотрудникам выдаются пропуска.",
        "rooms": "Переговорные. Где сотрудникам забронировать места? Места бронируются через календарь сотрудникам.",
    }))
    assert ranked(index, "Кому передавать больничный лист?")[0] == "sick"
    assert ranked(index, "Где сотрудникам парковаться?")[0] == "parking"
