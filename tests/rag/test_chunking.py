from __future__ import annotations

import re

import pytest

from rag.chunking import chunk_sections
from rag.loaders import Section


def words(text: str) -> int:
    return len(re.findall(r"\S+", text))


def _full(sections: list[Section]) -> str:
    return "\n\n".join(s.text for s in sections)


def test_short_section_is_one_chunk_with_its_place():
    s = [Section("Hello there.\n\nSecond paragraph.", page=3, heading="Intro", offset=0)]
    chunks = chunk_sections(s, count_tokens=words, max_tokens=50)
    assert len(chunks) == 1
    c = chunks[0]
    assert (c.page, c.heading, c.text) == (3, "Intro", "Hello there.\n\nSecond paragraph.")


def test_chunks_fit_overlap_and_point_into_the_document():
    paras = [" ".join(f"w{p}_{i}" for i in range(30)) + "." for p in range(10)]
    first = Section("\n\n".join(paras[:6]), page=1, heading=None, offset=0)
    second = Section("\n\n".join(paras[6:]), page=2, heading="Two", offset=len(first.text) + 2)
    sections = [first, second]
    full = _full(sections)
    chunks = chunk_sections(sections, count_tokens=words, max_tokens=70, overlap_tokens=30)
    assert all(words(c.text) <= 70 for c in chunks)
    for c in chunks:
        assert full[c.start : c.end] == c.text
    # Two 30-word paragraphs per chunk, the next one repeating the last paragraph.
    page1 = [c for c in chunks if c.page == 1]
    assert len(page1) == 5
    assert page1[0].text.endswith(paras[1]) and page1[1].text.startswith(paras[1])
    # No chunk crosses from page 1 into page 2.
    assert all(paras[6] not in c.text for c in page1)
    assert [c.index for c in chunks] == list(range(len(chunks)))


def test_long_paragraph_splits_at_sentences_then_words_never_inside_a_word():
    long_sentence = " ".join(f"token{i}" for i in range(130))
    text = "Short one. Another short sentence here. " + long_sentence + "."
    chunks = chunk_sections([Section(text, None, None, 0)], count_tokens=words, max_tokens=40, overlap_tokens=0)
    assert all(words(c.text) <= 40 for c in chunks)
    seen = " ".join(c.text for c in chunks).split()
    assert seen == text.split()  # every word kept, in order, none cut


def test_every_word_is_covered_with_overlap():
    text = "\n\n".join(f"Paragraph {i} says something about topic {i}." for i in range(40))
    chunks = chunk_sections([Section(text, None, None, 0)], count_tokens=words, max_tokens=25, overlap_tokens=10)
    covered = set()
    for c in chunks:
        covered.update(range(c.start, c.end))
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())


def test_empty_and_invalid():
    assert chunk_sections([Section("   \n\n  ", None, None, 0)], count_tokens=words) == []
    with pytest.raises(ValueError):
        chunk_sections([], count_tokens=words, max_tokens=2)
