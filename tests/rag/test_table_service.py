"""Tables through the service: kept in step with the manifest, answered without the model, stored with the
conversation, and the `ask --json` contract on the real parts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.tables import exact, make_documents
from rag.config import HearthConfig
from rag.service import Hearth
from rag.table_store import TableStore
from tests.fakes import HashEmbedder, ScriptedModel

ROOT = Path(__file__).resolve().parents[2]
CSV = "Invoice;Client;Amount;Status\nINV-1;Acme;100,50;Paid\nINV-2;Globex;200,00;Unpaid\nINV-3;Acme;50,25;Unpaid\n"


def make_hearth(tmp_path: Path, model: ScriptedModel | None = None) -> Hearth:
    return Hearth(HearthConfig(data_dir=tmp_path / "data", min_score=0.0), embedder=HashEmbedder(),
                  chat_model=model or ScriptedModel("The documents say nothing of it [1]."))


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "invoices.csv").write_text(CSV, encoding="utf-8")
    (folder / "policy.md").write_text("# Travel\n\nTrains are booked in second class.\n", encoding="utf-8")
    return folder


def test_a_table_answers_without_the_model_and_cites_its_rows(tmp_path: Path, docs: Path) -> None:
    model = ScriptedModel("The total is 999 [1].")
    hearth = make_hearth(tmp_path, model)
    hearth.ingest([docs])
    pieces: list[str] = []
    answer = hearth.ask("What is the total amount of unpaid invoices?", on_token=pieces.append)
    assert model.prompts == []  # the figure is computed, not generated
    assert answer.table is not None and answer.table.result == pytest.approx(250.25)
    assert "250.25" in answer.text and "".join(pieces) == answer.text
    out = answer.to_json()
    assert {"source", "sheet", "operation", "column", "filters", "rows_used", "result"} <= set(out["table"])
    assert out["table"]["filters"] == [{"column": "Status", "op": "=", "value": "Unpaid"}]
    assert out["table"]["rows_used"] == 2 and out["table"]["operation"] == "sum"
    (hit,) = answer.sources
    text = hearth.document_text(docs / "invoices.csv")
    assert text[hit.start:hit.end] == hit.text  # the citation opens the sheet at the rows used
    assert "INV-2" in hit.text and "INV-3" in hit.text
    # An ordinary question still goes to the model.
    hearth.ask("How are trains booked?")
    assert len(model.prompts) == 1


def test_tables_follow_the_document_reindexed_and_forgotten(tmp_path: Path, docs: Path) -> None:
    hearth = make_hearth(tmp_path)
    hearth.ingest([docs])
    assert hearth.table_answer("How many invoices are unpaid?").result == 2
    (docs / "invoices.csv").write_text(CSV + "INV-4;Initech;10,00;Unpaid\n", encoding="utf-8")
    hearth.ingest([docs])
    assert hearth.table_answer("How many invoices are unpaid?").result == 3
    assert hearth.tables.count("default") == 1  # the old version's table is gone
    hearth.forget([docs / "invoices.csv"])
    assert hearth.table_answer("How many invoices are unpaid?") is None
    assert hearth.tables.count("default") == 0


def test_a_run_killed_before_the_manifest_finished_shows_no_new_table(tmp_path: Path, docs: Path,
                                                                      monkeypatch) -> None:
    hearth = make_hearth(tmp_path)
    hearth.ingest([docs])
    (docs / "invoices.csv").write_text(CSV + "INV-4;Initech;10,00;Unpaid\n", encoding="utf-8")

    class Killed(BaseException):
        pass

    def killed(*args, **kwargs):
        raise Killed()

    monkeypatch.setattr(hearth.manifest, "finish", killed)
    monkeypatch.setattr(hearth.manifest, "finish_many", killed)
    with pytest.raises(Killed):
        hearth.ingest([docs / "invoices.csv"])
    monkeypatch.undo()
    # The new table was written, but its document is not done: neither it nor the old one counts.
    assert hearth.table_answer("How many invoices are unpaid?") is None
    hearth.ingest([docs])
    assert hearth.table_answer("How many invoices are unpaid?").result == 3
    assert hearth.tables.count("default") == 1


def test_scope_limits_the_tables(tmp_path: Path, docs: Path) -> None:
    (docs / "other.csv").write_text("Invoice;Status\nX-1;Unpaid\n", encoding="utf-8")
    hearth = make_hearth(tmp_path)
    hearth.ingest([docs])
    assert hearth.table_answer("How many invoices are unpaid?", scope=[docs / "other.csv"]).result == 1
    assert hearth.table_answer("How many invoices are unpaid?", scope=[docs / "invoices.csv"]).result == 2


def test_the_table_is_kept_with_the_conversation_and_redacted_when_forgotten(tmp_path: Path, docs: Path) -> None:
    hearth = make_hearth(tmp_path)
    hearth.ingest([docs])
    conv = hearth.new_conversation("Invoices")
    hearth.ask("Which invoices are unpaid?", conversation=conv)
    stored = hearth.conversations.get(conv).turns[0].answer
    assert stored.table is not None and stored.table.result == ["INV-2", "INV-3"]
    assert [list(r.cells[:2]) for r in stored.table.rows] == [["INV-2", "Globex"], ["INV-3", "Acme"]]
    hearth.forget([docs / "invoices.csv"])
    assert hearth.conversations.get(conv).turns[0].answer.table is None


def test_table_store_swaps_a_document_in_one_transaction(tmp_path: Path) -> None:
    from rag.loaders import load
    from rag.tables import extract_tables

    path = tmp_path / "a.csv"
    path.write_text(CSV, encoding="utf-8")
    tables = extract_tables(str(path), load(path))
    store = TableStore(tmp_path / "tables.sqlite")
    store.write("w", [(str(path), "v1", tables)])
    broken = [*tables, None]  # the second table cannot be written: the whole swap is undone
    with pytest.raises(AttributeError):
        store.write("w", [(str(path), "v2", broken)])
    assert [t.columns for t in store.tables("w", {str(path): "v1"})] == [tables[0].columns]
    assert store.tables("w", {str(path): "v2"}) == []
    assert store.prune("w", {}) == 1 and store.count("w") == 0


@pytest.mark.slow
def test_ask_json_contract_on_the_real_parts(tmp_path: Path) -> None:
    """The generated staff workbook and invoice CSV, the real embedder, `hearth ask --json`."""
    docs = tmp_path / "docs"
    docs.mkdir()
    questions = {q.kind: q for q in make_documents(docs, seed=7)}
    env = dict(os.environ, HEARTH_DATA_DIR=str(tmp_path / "data"))

    def hearth(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "app", "--threads", "2", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=600)

    r = hearth("ingest", str(docs), "--json")
    assert r.returncode == 0, r.stderr
    for kind in ("count", "sum", "list", "group"):
        q = questions[kind]
        r = hearth("ask", q.text, "--json")
        assert r.returncode == 0, r.stderr
        table = json.loads(r.stdout)["table"]
        assert exact(q.answer, table["result"]), (q.text, table["result"], q.answer)
        assert table["source"].endswith(("staff-list.xlsx", "invoices.csv")) and table["rows_used"] >= 1


def test_a_failing_table_match_costs_nothing_but_itself(tmp_path: Path, docs: Path, monkeypatch) -> None:
    model = ScriptedModel("Unpaid ones are listed [1].")
    hearth = make_hearth(tmp_path, model)
    hearth.ingest([docs])

    def broken(*args, **kwargs):
        raise ValueError("a matcher bug")

    monkeypatch.setattr("rag.questions.answer_from_tables", broken)
    answer = hearth.ask("How many invoices are unpaid?")
    assert answer.table is None and len(model.prompts) == 1  # searched and answered the usual way


def test_changed_cell_values_are_matched_after_a_reindex(tmp_path: Path, docs: Path) -> None:
    hearth = make_hearth(tmp_path)
    hearth.ingest([docs])
    assert hearth.table_answer("How many invoices are unpaid?").result == 2
    # The same table at the same place in the file, with other values: the new ones are what a question names.
    (docs / "invoices.csv").write_text(CSV.replace("Unpaid", "Pending"), encoding="utf-8")
    hearth.ingest([docs])
    assert hearth.table_answer("How many invoices are pending?").result == 2
    assert hearth.table_answer("How many invoices are unpaid?") is None
