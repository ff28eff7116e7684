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


# -- tables, long stretches, the real tokenizer -------------------------------------------------------------


def _table_section(rows: int, *, before: str = "Rates below.") -> Section:
    header = "Name | Team | Extension"
    lines = [header] + [f"Person{i} | Team{i % 3} | {4400 + i}" for i in range(rows)]
    table = "\n".join(lines)
    text = f"{before}\n\n{table}\n\nAfter the table."
    start = len(before) + 2
    return Section(text, None, "Staff", 0, tables=((start, start + len(table)),))


def test_small_table_stays_whole_in_one_chunk():
    s = _table_section(3)
    chunks = chunk_sections([s], count_tokens=words, max_tokens=60, overlap_tokens=0)
    assert len(chunks) == 1 and chunks[0].context is None


def test_split_table_repeats_its_header_row_in_every_chunk():
    s = _table_section(40)
    chunks = chunk_sections([s], count_tokens=words, max_tokens=30, overlap_tokens=8)
    header = "Name | Team | Extension"
    table_chunks = [c for c in chunks if "Person" in c.text]
    assert len(table_chunks) > 3
    for c in table_chunks:
        assert s.text[c.start : c.end] == c.text  # offsets still point at the chunk's own text
        assert c.passage.startswith(header + "\n") or c.text.startswith(header) or c.text.startswith("Rates")
        assert words(c.passage) <= 30  # the repeated header counts against the budget
        if not c.text.startswith(("Rates", header)):
            assert c.context == header and c.passage == f"{header}\n{c.text}"
    # Every row is in some chunk, and no chunk holds the header row alone.
    for i in range(40):
        assert any(f"Person{i} |" in c.text for c in chunks)
    assert not any(c.text.strip() == header for c in chunks)


def test_table_header_is_not_repeated_when_it_would_crowd_out_the_rows():
    header = " | ".join(f"column{i}" for i in range(20))
    table = "\n".join([header] + [f"v{r} | " + " | ".join("x" for _ in range(19)) for r in range(10)])
    s = Section(table, None, None, 0, tables=((0, len(table)),))
    chunks = chunk_sections([s], count_tokens=words, max_tokens=36, overlap_tokens=0)
    assert all(c.context is None for c in chunks)
    assert all(words(c.text) <= 36 for c in chunks)


def test_a_huge_text_without_sentences_or_paragraphs_is_cut_in_linear_time():
    import time

    text = " ".join(f"w{i % 5000}" for i in range(200_000))  # one 200k-word "sentence"
    calls = 0

    def counting(t: str) -> int:
        nonlocal calls
        calls += 1
        return words(t)

    t0 = time.perf_counter()
    chunks = chunk_sections([Section(text, 1, None, 0)], count_tokens=counting, max_tokens=100, overlap_tokens=0)
    assert time.perf_counter() - t0 < 5
    assert calls < 20_000  # per distinct word and per run, not per word per run
    assert " ".join(c.text for c in chunks).split() == text.split()
    assert all(words(c.text) <= 100 for c in chunks)


@pytest.fixture(scope="module")
def real_tokens():
    from tokenizers import Tokenizer

    from inference import models

    info = models.DEFAULT_EMBEDDER
    path = models._module_dir(info.module, info.package) / info.folder / "tokenizer.json"
    tok = Tokenizer.from_file(str(path))
    tok.no_truncation()
    tok.no_padding()
    return lambda text: len(tok.encode(text, add_special_tokens=False).ids)


def test_chunks_fit_the_real_tokenizer_and_keep_every_word(real_tokens):
    para = (
        "Reimbursement of travel expenses (Reisekostenabrechnung) requires itemised receipts, "
        "submitted within thirty days via the expense portal; exceptions need approval. "
    )
    text = "\n\n".join(para * (i % 4 + 1) for i in range(30)) + "\n\n" + "Supercalifragilistic" * 3 + " end."
    sections = [Section(text, 2, "Travel", 0)]
    chunks = chunk_sections(sections, count_tokens=real_tokens, max_tokens=120, overlap_tokens=20)
    assert all(real_tokens(c.passage) <= 120 for c in chunks)
    assert all(text[c.start : c.end] == c.text for c in chunks)
    # Never inside a word: each chunk starts and ends at a word boundary of the text.
    for c in chunks:
        assert c.start == 0 or text[c.start - 1].isspace()
        assert c.end == len(text) or text[c.end].isspace()
    covered = set()
    for c in chunks:
        covered.update(range(c.start, c.end))
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())


def test_a_tokenizer_that_is_not_additive_over_words_is_counted_whole():
    # Counting characters: a text's count is not the sum of its words' counts (spaces count too).
    text = "\n\n".join(" ".join(f"word{i}x{j}" for j in range(12)) + "." for i in range(30))
    chunks = chunk_sections([Section(text, None, None, 0)], count_tokens=len, max_tokens=200, overlap_tokens=0)
    assert all(len(c.text) <= 200 for c in chunks)
    assert all(text[c.start : c.end] == c.text for c in chunks)


def test_a_chunk_is_embedded_after_its_own_sections_heading_only():
    # A section opens with its heading, so its first chunk is embedded as it is; a later chunk gets the section's
    # own heading before it, not the whole path above (the path cost 10 % more tokens for no held-out gain).
    from rag.chunking import embedding_text
    from rag.loaders import HEADING_SEPARATOR

    heading = HEADING_SEPARATOR.join(["Travel policy", "Abroad", "Meals"])
    text = "Meals\n\n" + " ".join(f"word{i}." for i in range(60))
    chunks = chunk_sections([Section(text, None, heading, 0)], count_tokens=words, max_tokens=25)
    assert len(chunks) >= 3 and all(c.heading == heading for c in chunks)
    assert embedding_text(chunks[0]) == chunks[0].text
    for c in chunks[1:]:
        assert embedding_text(c) == f"Meals\n{c.text}"
    assert chunks[1].start >= chunks[0].end  # no overlap by default: each token is embedded once
