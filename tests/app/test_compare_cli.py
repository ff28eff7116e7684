"""`hearth compare` end to end: the real embedder and index, a Word contract in two versions, the JSON contract,
the exit codes of bad inputs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import docx
import pytest

from app.cli import main

CLAUSES = {
    "1. Parties": "This contract is made between Acme Ltd and Birch Consulting. It starts on 1 March 2024.",
    "2. Fees": "The client pays a monthly fee of EUR 1,200. Invoices are due within 30 days of their date.",
    "3. Confidentiality": "Both parties keep the other's information confidential during the contract and for "
                          "two years after it ends.",
    "4. Termination": "Either party may end this contract with three months' notice in writing.",
}


def write_contract(path: Path, clauses: dict[str, str], prices: list[tuple[str, str]]) -> Path:
    d = docx.Document()
    d.add_heading("Service contract", 0)
    for heading, text in clauses.items():
        d.add_heading(heading, 1)
        d.add_paragraph(text)
        if heading == "2. Fees":
            table = d.add_table(rows=len(prices) + 1, cols=2)
            for r, row in enumerate([("Service", "Price"), *prices]):
                table.cell(r, 0).text, table.cell(r, 1).text = row
    d.save(str(path))
    return path


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    """A workspace with a Word contract indexed twice (revised in between) and an unrelated memo."""
    root = tmp_path_factory.mktemp("compare-cli")
    data, docs = root / "data", root / "docs"
    docs.mkdir()
    contract = write_contract(docs / "contract.docx", CLAUSES, [("Support", "EUR 400"), ("Hosting", "EUR 800")])
    (docs / "memo.md").write_text("# Parking\n\nThe car park closes at 20:00 on weekdays. Bicycles go in the yard.\n")
    assert main(["--data-dir", str(data), "ingest", str(docs)]) == 0
    revised = dict(CLAUSES)
    revised["2. Fees"] = CLAUSES["2. Fees"].replace("EUR 1,200", "EUR 1,350")
    revised["3. Confidentiality"] = CLAUSES["3. Confidentiality"].replace("two years", "five years")
    del revised["4. Termination"]
    revised["4. Notice"] = CLAUSES["4. Termination"]  # renamed, same text
    write_contract(contract, revised, [("Support", "EUR 400"), ("Hosting", "EUR 950")])
    st = contract.stat()
    os.utime(contract, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    assert main(["--data-dir", str(data), "ingest", str(docs)]) == 0
    return data, docs


def test_compare_with_the_previous_version_as_json(indexed, capsys):
    data, docs = indexed
    code, out, _ = run(capsys, "--data-dir", str(data), "compare", str(docs / "contract.docx"), "--previous", "--json")
    assert code == 0
    body = json.loads(out)
    assert set(body) == {"old", "new", "changes", "summary"}
    assert body["old"]["version"] == 1 and body["new"]["version"] == 2
    assert body["old"]["source"] == body["new"]["source"] == str((docs / "contract.docx").resolve())
    assert body["old"]["indexed_at"] <= body["new"]["indexed_at"]
    for change in body["changes"]:
        assert set(change) == {"kind", "heading", "old_text", "new_text", "old_page", "new_page"}
    found = {(c["kind"], c["old_text"], c["new_text"]) for c in body["changes"]}
    assert found == {
        ("changed", "The client pays a monthly fee of EUR 1,200.", "The client pays a monthly fee of EUR 1,350."),
        ("changed", "Hosting | EUR 800", "Hosting | EUR 950"),
        ("changed", CLAUSES["3. Confidentiality"], CLAUSES["3. Confidentiality"].replace("two years", "five years")),
        ("changed", "4. Termination", "4. Notice"),
    }  # every change, and no untouched section
    assert "1,200 → 1,350" in body["summary"] and "800 → 950" in body["summary"]


def test_compare_for_reading(indexed, capsys):
    data, docs = indexed
    code, out, _ = run(capsys, "--data-dir", str(data), "compare", str(docs / "contract.docx"), "--previous")
    assert code == 0
    assert "old: " in out and "(version 1, indexed" in out and "(version 2, indexed" in out
    assert "words: The client pays a monthly fee of EUR [-1,200.-] {+1,350.+}" in out
    assert "renamed — Service contract › 4. Notice" in out


def test_bad_inputs_exit_with_a_reason_and_change_nothing(indexed, capsys, tmp_path):
    data, docs = indexed
    contract, memo = str(docs / "contract.docx"), str(docs / "memo.md")
    before = sorted(p.name for p in (data / "versions" / "default").rglob("*"))
    cases = [
        (["compare", str(tmp_path / "none.docx"), contract], 2, "is not an indexed document"),
        (["compare", contract, "--previous", "--version", "9"], 2, "no earlier version 9: the versions kept are 1"),
        (["compare", memo, "--previous"], 2, "indexed in one version only"),
        (["compare", contract, memo], 1, "share no sections"),
        (["compare", contract], 2, "two documents"),
        (["compare", contract, memo, "--previous"], 2, "OLD NEW, or one PATH with --previous"),
    ]
    for args, code, message in cases:
        got, out, err = run(capsys, "--data-dir", str(data), *args)
        assert (got, out) == (code, ""), args
        assert message in err, (args, err)
    assert sorted(p.name for p in (data / "versions" / "default").rglob("*")) == before


def test_ask_json_carries_the_comparison_that_answered(indexed, capsys):
    """`ask --json` with a tiny random-weight model (its overview is noise): the changes are Hearth's own."""
    pytest.importorskip("llama_cpp")
    pytest.importorskip("gguf")
    from tests.tinygguf import write_tiny_llama

    data, docs = indexed
    (data / "models").mkdir(exist_ok=True)
    write_tiny_llama(data / "models" / "tiny.gguf", n_ctx=2048)
    code, out, _ = run(capsys, "--data-dir", str(data), "--threads", "2", "ask", "What changed in the contract?",
                       "--model", "tiny.gguf", "--ctx", "2048", "--json")
    assert code == 0
    body = json.loads(out)
    assert body["comparison"]["old"]["version"] == 1 and len(body["comparison"]["changes"]) == 4
    assert "EUR ~~1,200.~~ **1,350.**" in body["answer"]  # the list of changes, the changed words marked
    assert "[old: version 1; new: version 2]" in body["answer"]
    assert [s["source"] for s in body["sources"]] == [str((docs / "contract.docx").resolve())] * 2
