"""The comparison itself (rag/compare.py): each kind of change, renamed and moved sections, tables, formats."""

from __future__ import annotations

from pathlib import Path

import docx
from fpdf import FPDF

from rag.compare import align, compare, figures_changed, sentences, units, word_changes
from rag.loaders import Section, load
from rag.loaders.markdown import parse

POLICY = """# Travel policy

## 1. Scope

This policy covers all staff who travel for the firm. It applies from 1 March 2024.

## 2. Meals

Meals are paid at EUR 45 per day. Alcohol is not refunded. Receipts are kept for six years.

## 3. Hotels

Hotels up to EUR 150 per night are refunded. Book through the travel desk at least a week ahead.

## 4. Approval

Trips abroad need the partner's approval in writing. The approval is filed with the expense claim.
"""


def changes_of(old: str, new: str):
    return compare(parse(old), parse(new)).changes


def test_the_same_text_has_no_changes():
    assert changes_of(POLICY, POLICY) == []


def test_formatting_and_spacing_only_are_not_changes():
    new = (POLICY.replace("all staff", "**all staff**").replace("per day. Alcohol", "per day.   Alcohol")
           .replace("EUR 150", "*EUR 150*").replace("Trips abroad need", "Trips  abroad\nneed")
           .replace("travel desk", "Travel Desk"))
    assert new != POLICY
    assert changes_of(POLICY, new) == []


def test_a_changed_sentence_is_shown_old_and_new_with_its_figures():
    result = compare(parse(POLICY), parse(POLICY.replace("EUR 45 per day", "EUR 50 per day")))
    [change] = result.changes
    assert change.kind == "changed" and change.heading == "Travel policy › 2. Meals"
    assert change.old_text == "Meals are paid at EUR 45 per day."
    assert change.new_text == "Meals are paid at EUR 50 per day."
    assert change.figures == (("45", "50"),)
    assert ("-", "45") in word_changes(change.old_text, change.new_text)
    assert "45 → 50" in result.summary


def test_an_added_and_a_removed_sentence():
    new = POLICY.replace(" Alcohol is not refunded.", "").replace(
        "filed with the expense claim.", "filed with the expense claim. Train is preferred for trips under 500 km.")
    kinds = [(c.kind, c.old_text, c.new_text) for c in changes_of(POLICY, new)]
    assert kinds == [("removed", "Alcohol is not refunded.", None),
                     ("added", None, "Train is preferred for trips under 500 km.")]


def test_a_new_section_is_one_addition_and_a_deleted_one_one_removal():
    extra = "## 5. Insurance\n\nStaff abroad are insured by the firm. The policy number is on the intranet.\n"
    added = changes_of(POLICY, POLICY + "\n" + extra)
    assert [(c.kind, c.heading) for c in added] == [("added", "Travel policy › 5. Insurance")]
    assert "insured by the firm" in added[0].new_text and "5. Insurance" in added[0].new_text
    removed = changes_of(POLICY + "\n" + extra, POLICY)
    assert [(c.kind, c.heading) for c in removed] == [("removed", "Travel policy › 5. Insurance")]


def test_a_moved_section_is_one_move_not_a_removal_and_an_addition():
    head, rest = POLICY.split("## 2. Meals")
    meals, rest = ("## 2. Meals" + rest).split("## 3. Hotels")
    moved = head + "## 3. Hotels" + rest.rstrip("\n") + "\n\n" + meals.rstrip("\n") + "\n"
    [change] = changes_of(POLICY, moved)
    assert change.kind == "moved" and change.heading == "Travel policy › 2. Meals"
    assert change.old_text == change.new_text and "EUR 45 per day" in change.new_text


def test_a_renamed_section_is_its_heading_changed_and_its_body_matched():
    [change] = changes_of(POLICY, POLICY.replace("## 3. Hotels", "## 3. Accommodation"))
    assert change.kind == "changed" and change.renamed
    assert (change.old_text, change.new_text) == ("3. Hotels", "3. Accommodation")
    assert change.heading == "Travel policy › 3. Accommodation"


def test_a_section_replaced_by_another_is_a_removal_and_an_addition_not_a_rename():
    """A section whose heading and text are both gone, another in its place, is no rename of it."""
    short = POLICY.replace("## 3. Hotels\n\nHotels up to EUR 150 per night are refunded. Book through the travel desk "
                           "at least a week ahead.", "## 3. Rail\n\nTrains are preferred for trips under four hours. Seats are reserved "
                                                   "by the office manager.")
    found = changes_of(POLICY, short)
    assert sorted(c.kind for c in found) == ["added", "removed"] and not any(c.renamed for c in found)
    removed = next(c for c in found if c.kind == "removed")
    assert "EUR 150" in removed.old_text and removed.heading.endswith("3. Hotels")
    assert "Trains are preferred" in next(c for c in found if c.kind == "added").new_text


def test_a_section_moved_and_edited_is_a_move_and_a_change():
    head, rest = POLICY.split("## 2. Meals")
    meals, rest = ("## 2. Meals" + rest).split("## 3. Hotels")
    meals = meals.replace("EUR 45", "EUR 48")
    moved = head + "## 3. Hotels" + rest.rstrip("\n") + "\n\n" + meals.rstrip("\n") + "\n"
    found = sorted((c.kind, c.old_text or "", c.new_text or "") for c in changes_of(POLICY, moved))
    assert [k for k, _, _ in found] == ["changed", "moved"]
    assert found[0][1:] == ("Meals are paid at EUR 45 per day.", "Meals are paid at EUR 48 per day.")


def test_a_changed_table_row_is_matched_by_its_key_column():
    table = "| Item | Limit | Notes |\n|---|---|---|\n| Meals | EUR 45 | per day |\n| Hotel | EUR 150 | per night |\n"
    old = POLICY + "\n## 5. Limits\n\n" + table
    new = old.replace("| Hotel | EUR 150 | per night |", "| Hotel | EUR 165 | a night, breakfast included |")
    sections = parse(old)
    assert any(s.tables for s in sections)  # the loader saw a table: rows are compared as rows
    [change] = changes_of(old, new)
    assert change.kind == "changed" and change.old_text.startswith("Hotel") and change.new_text.startswith("Hotel")
    assert change.figures[0] == ("150", "165")


def test_rows_added_and_removed_in_a_table():
    table = "| Item | Limit |\n|---|---|\n| Meals | EUR 45 |\n| Hotel | EUR 150 |\n| Taxi | EUR 30 |\n"
    old = POLICY + "\n## 5. Limits\n\n" + table
    new = old.replace("| Taxi | EUR 30 |\n", "").replace("| Hotel | EUR 150 |\n", "| Hotel | EUR 150 |\n| Parking | EUR 20 |\n")
    kinds = sorted((c.kind, (c.old_text or c.new_text)) for c in changes_of(old, new))
    assert kinds == [("added", "Parking | EUR 20"), ("removed", "Taxi | EUR 30")]


def test_unrelated_documents_share_nothing():
    other = "# Menu\n\n## Starters\n\nSoup of the day with bread. Garden salad with goat cheese.\n"
    assert compare(parse(POLICY), parse(other)).shared < 0.1
    assert compare(parse(POLICY), parse(POLICY)).shared == 1.0


def test_sentences_are_not_split_after_abbreviations_or_clause_numbers():
    assert sentences("See e.g. the annex. Costs rise by 5 per cent. No. 4 applies.") == [
        "See e.g. the annex.", "Costs rise by 5 per cent.", "No. 4 applies."]
    assert sentences("4.2. Meals are paid. Hotels too.") == ["4.2. Meals are paid.", "Hotels too."]


def test_figures_dates_and_amounts_are_read_whole():
    assert figures_changed("Due on 1 March 2024, EUR 1,200 a month, 5%.", "Due on 1 April 2025, EUR 1,350 a month, 5%.") \
        == (("1 March 2024", "1 April 2025"), ("1,200", "1,350"))
    assert figures_changed("EUR 1,200", "EUR 1.200") == (("1,200", "1.200"),)  # a figure's punctuation counts


def test_the_alignment_keeps_the_larger_text_in_place():
    # Three short keys moved before one long one: the long one stays, the short ones moved (fewer words).
    old = ["a", "b", "c", "a long sentence of many words here"]
    new = ["a long sentence of many words here", "a", "b", "c"]
    assert align(old, new) == [(3, 0)]


CONTRACT = [
    ("title", "Service contract"),
    ("h1", "1. Parties"),
    ("p", "This contract is made between Acme Ltd and the client named on the order form. It starts on "
          "1 March 2025 and runs for twelve months from that date."),
    ("h1", "2. Fees"),
    ("p", "The client pays a monthly fee of EUR 1,200 for the services in the schedule. Invoices are due within "
          "30 days of their date."),
    ("table", [("Service", "Price"), ("Support", "EUR 400"), ("Hosting", "EUR 800")]),
    ("h1", "3. Termination"),
    ("p", "Either party may end this contract with three months' notice in writing. Notice sent by email counts "
          "as written notice."),
]


def write_docx(path: Path, content) -> Path:
    d = docx.Document()
    for kind, value in content:
        if kind == "title":
            d.add_heading(value, 0)
        elif kind == "h1":
            d.add_heading(value, 1)
        elif kind == "p":
            d.add_paragraph(value)
        else:
            table = d.add_table(rows=len(value), cols=len(value[0]))
            for r, row in enumerate(value):
                for c, cell in enumerate(row):
                    table.cell(r, c).text = cell
    d.save(str(path))
    return path


def write_pdf(path: Path, content) -> Path:
    """The same content as a PDF: bold headings, wrapped paragraphs, the table as cells on lines (no table marks)."""
    pdf = FPDF()
    pdf.add_page()
    for kind, value in content:
        if kind in ("title", "h1"):
            pdf.set_font("Helvetica", "B", 14)
            pdf.multi_cell(0, 8, value, new_x="LMARGIN", new_y="NEXT")
        elif kind == "p":
            pdf.set_font("Helvetica", size=11)
            pdf.multi_cell(0, 6, value, new_x="LMARGIN", new_y="NEXT")
        else:
            for row in value:
                for cell in row:
                    pdf.cell(50, 6, cell)
                pdf.ln()
    pdf.output(str(path))
    return path


def test_a_word_file_against_its_pdf_has_no_changes_and_an_edit_in_the_pdf_is_found(tmp_path):
    word = load(write_docx(tmp_path / "contract.docx", CONTRACT))
    pdf = load(write_pdf(tmp_path / "contract.pdf", CONTRACT))
    assert any(s.tables for s in word) and not any(s.tables for s in pdf)  # the same rows, read differently
    assert any("\nand runs for" in s.text for s in pdf)  # the PDF's lines are wrapped
    assert compare(word, pdf).changes == []
    edited = [(k, v.replace("EUR 1,200", "EUR 1,250") if k == "p" else
               [r if r[0] != "Hosting" else ("Hosting", "EUR 850") for r in v] if k == "table" else v)
              for k, v in CONTRACT]
    changes = compare(word, load(write_pdf(tmp_path / "contract-2.pdf", edited))).changes
    assert [(c.kind, c.figures, c.new_page) for c in changes] == [
        ("changed", (("1,200", "1,250"),), 1), ("changed", (("800", "850"),), 1)]
    assert changes[0].heading == "Service contract › 2. Fees"  # the Word side names the section


def test_units_read_headings_sentences_and_rows():
    found = [(u.kind, u.text) for u in units(parse("# Fees\n\nOne rule. Two rules.\n\n| A | B |\n|---|---|\n| x | 1 |\n"))]
    assert found == [("heading", "Fees"), ("text", "One rule."), ("text", "Two rules."), ("row", "A | B"),
                     ("row", "x | 1")]


def test_a_document_without_headings_names_the_section_from_the_line_above():
    text = ("Office rules\n\n1. Hours\n\nCore hours run from 10:00 to 15:00. Staff record their hours weekly.\n\n"
            "2. Fees\n\nThe client pays EUR 1,200 a month. Invoices are due within 30 days.\n")
    old = [Section(text, 1, None, 0)]
    new = [Section(text.replace("EUR 1,200", "EUR 1,300"), 1, None, 0)]
    [change] = compare(old, new).changes
    assert (change.kind, change.heading, change.new_page) == ("changed", "2. Fees", 1)


def test_items_renumbered_by_an_insertion_are_not_changes_but_a_leading_figure_is():
    steps = "# Claims\n\n## Steps\n\n1. Book through the desk.\n2. Keep the receipts.\n3. Claim within 30 days.\n"
    inserted = steps.replace("2. Keep the receipts.\n3. Claim", "2. Ask your manager first.\n3. Keep the receipts.\n4. Claim")
    assert [(c.kind, c.new_text) for c in changes_of(steps, inserted)] == [("added", "2. Ask your manager first.")]
    leave = "# Leave\n\n## Days\n\n12 days of leave are given in the first year.\n"
    [change] = changes_of(leave, leave.replace("12 days", "15 days"))
    assert change.kind == "changed" and change.figures == (("12", "15"),)


def test_two_sentences_rewritten_in_place_are_two_changes():
    new = POLICY.replace("Meals are paid at EUR 45 per day. Alcohol is not refunded.",
                         "Lunch costs up to EUR 20. Drinks are on you.")
    found = [(c.kind, c.old_text, c.new_text) for c in changes_of(POLICY, new)]
    assert found == [("changed", "Meals are paid at EUR 45 per day.", "Lunch costs up to EUR 20."),
                     ("changed", "Alcohol is not refunded.", "Drinks are on you.")]


def test_a_short_note_edited_through_is_still_the_same_document():
    old = [Section("Team meeting on Monday at 10:00 in room 4.", None, None, 0)]
    new = [Section("Team meeting on Tuesday at 11:00 in room 4.", None, None, 0)]
    result = compare(old, new)
    assert result.shared == 1.0 and [c.figures for c in result.changes] == [(("10:00", "11:00"),)]
