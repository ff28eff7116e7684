"""Exactness of table answers: generated workbooks with known answers, asked through the service.

    python -m bench.tables [--seeds 5] [--json]

For each seed: a staff workbook (XLSX, a title above the header, two sheets) and an invoice CSV (semicolon
delimiter, decimal commas, day-first dates), written with the seed; questions whose answers are computed
here from the generated values (not from Hearth's reading of the files); the documents ingested into a
fresh data folder with the real embedder and each question asked with `Hearth.table_answer`. A result is
exact when it equals the known answer (numbers to the cent, lists as sets). Prints the share of exact
results per kind of question and in all.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import random
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

OFFICES = ["Lisbon", "Berlin", "Warsaw", "Madrid", "Porto"]
DEPARTMENTS = ["Finance", "Sales", "Engineering", "Legal", "Support"]
FIRST = ["Anna", "Bruno", "Clara", "Diogo", "Elena", "Filip", "Greta", "Hugo", "Irina", "Jonas", "Karla", "Luis"]
LAST = ["Silva", "Novak", "Meyer", "Costa", "Kowalska", "Garcia", "Ivanova", "Brandt", "Ferreira", "Sousa"]
CLIENTS = ["Acme Corp", "Globex", "Initech", "Umbrella", "Stark Industries"]
STATUSES = ["Paid", "Unpaid", "Overdue"]


@dataclass(frozen=True)
class Question:
    """A question with the answer computed from the generated rows."""

    kind: str
    text: str
    answer: Any  # a number, or a set of names


def make_documents(folder: Path, seed: int, spec_file: Path | None = None) -> list[Question]:
    """Write staff-list.xlsx and invoices.csv for `seed` into `folder`; the questions with their answers (this
    module's twelve, or those of `spec_file`, answered from their specs)."""
    import openpyxl

    rng = random.Random(seed)
    staff = []
    for i in range(150):
        staff.append({
            "id": f"E{i + 1:04d}", "name": f"{rng.choice(FIRST)} {rng.choice(LAST)} {i + 1}",
            "office": rng.choice(OFFICES), "department": rng.choice(DEPARTMENTS),
            "salary": rng.randrange(2400, 9800, 50),
            "start": dt.date(2015, 1, 1) + dt.timedelta(days=rng.randrange(0, 3650)),
        })  # fmt: skip
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Staff"
    sheet.append(["Staff list", None, "updated monthly"])
    sheet.append([])
    sheet.append(["Employee ID", "Name", "Office", "Department", "Salary", "Start date"])
    for s in staff:
        sheet.append([s["id"], s["name"], s["office"], s["department"], s["salary"],
                      dt.datetime.combine(s["start"], dt.time())])
    sites = [{"office": office, "country": country, "desks": rng.randrange(20, 200)}
             for office, country in zip(OFFICES, ["Portugal", "Germany", "Poland", "Spain", "Portugal"], strict=True)]
    offices = book.create_sheet("Offices")
    offices.append(["Office", "Country", "Desks"])
    for site in sites:
        offices.append([site["office"], site["country"], site["desks"]])
    book.save(folder / "staff-list.xlsx")

    invoices = []
    for i in range(80):
        invoices.append({
            "number": f"INV-{2024000 + i + 1}", "client": rng.choice(CLIENTS),
            "amount": rng.randrange(5_000, 2_500_000) / 100, "status": rng.choices(STATUSES, [5, 3, 2])[0],
            "date": dt.date(2024, 1, 1) + dt.timedelta(days=rng.randrange(0, 540)),
        })  # fmt: skip
    with open(folder / "invoices.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, delimiter=";")
        writer.writerow(["Invoice", "Client", "Amount (EUR)", "Status", "Issued"])
        for v in invoices:
            amount = f"{v['amount']:,.2f}".replace(",", " ").replace(".", ",")  # "12 345,67"
            writer.writerow([v["number"], v["client"], amount, v["status"], v["date"].strftime("%d.%m.%Y")])

    office, dept, client = rng.choice(OFFICES), rng.choice(DEPARTMENTS), rng.choice(CLIENTS)
    status = rng.choice(STATUSES)
    in_office = [s for s in staff if s["office"] == office]
    if spec_file is not None:
        data = {"staff": staff, "offices": sites, "invoices": invoices}
        places = {"office": office, "department": dept, "client": client, "status": status}
        return [_from_spec(q, data, places) for q in json.loads(Path(spec_file).read_text(encoding="utf-8"))]
    return [
        Question("count", f"How many employees work in {office}?", len(in_office)),
        Question("count", f"How many invoices are {status.lower()}?",
                 sum(v["status"] == status for v in invoices)),
        Question("sum", f"What is the total amount of invoices for {client}?",
                 round(sum(v["amount"] for v in invoices if v["client"] == client), 2)),
        Question("sum", "What is the total of all invoices?", round(sum(v["amount"] for v in invoices), 2)),
        Question("average", f"What is the average salary in {office}?",
                 round(sum(s["salary"] for s in in_office) / len(in_office), 2)),
        Question("max", "What is the highest salary?", max(s["salary"] for s in staff)),
        Question("min", "What is the smallest invoice amount?", min(v["amount"] for v in invoices)),
        Question("list", f"Which employees work in {dept} in {office}?",
                 {s["name"] for s in in_office if s["department"] == dept}),
        Question("list", f"List the invoices of {client} that are {status.lower()}.",
                 {v["number"] for v in invoices if v["client"] == client and v["status"] == status}),
        Question("dates", "How many employees started in 2020?", sum(s["start"].year == 2020 for s in staff)),
        Question("compare", "How many invoices are over 10,000?", sum(v["amount"] > 10_000 for v in invoices)),
        Question("extreme", "Which office has the most employees?", _winners(
            {o: sum(s["office"] == o for s in staff) for o in OFFICES}, max)),
        Question("extreme", "Which client has the highest total?", _winners(
            {c: round(sum(v["amount"] for v in invoices if v["client"] == c), 2) for c in CLIENTS}, max)),
        Question("group", "How many invoices are there by status?",
                 {st: sum(v["status"] == st for v in invoices) for st in STATUSES
                  if any(v["status"] == st for v in invoices)}),
    ]


_LABELS = {"staff": "name", "invoices": "number", "offices": "office"}


def _winners(values: dict[str, float], pick: Callable[..., float]) -> set[str]:
    """The keys that have the extreme value (several when tied)."""
    best = pick(values.values())
    return {k for k, v in values.items() if v == best}


def _from_spec(item: dict[str, Any], data: dict[str, list[dict[str, Any]]], places: dict[str, str]) -> Question:
    """A question of a spec file with its answer computed from the generated rows."""
    spec = item["spec"]
    rows = data[spec["table"]]

    def fill(value: Any) -> Any:
        return value.format(**places) if isinstance(value, str) else value

    def keep(row: dict[str, Any]) -> bool:
        for field, op, value in spec.get("where") or []:
            have, value = row["date" if field == "date" else field], fill(value)
            if isinstance(have, dt.date):
                if op == "year":
                    ok = have.year == int(value)
                else:
                    bound = dt.date.fromisoformat(str(value)) if len(str(value)) > 4 else None
                    if bound is None:  # a bare year: before its first day, after its last
                        year = int(value)
                        bound = dt.date(year, 1, 1) if op in ("before", "<", "<=") else dt.date(year, 12, 31)
                    ok = {"before": have < bound, "after": have > bound, "<": have < bound, ">": have > bound,
                          "<=": have <= bound, ">=": have >= bound, "=": have == bound}[op]
            elif op in ("=", "!="):
                ok = (str(have).lower() == str(value).lower()) == (op == "=")
            else:
                ok = {">": have > value, "<": have < value, ">=": have >= value, "<=": have <= value}[op]
            if not ok:
                return False
        return True

    chosen = [r for r in rows if keep(r)]
    op, column = spec["op"], spec.get("column")
    key = {"start": "start", "date": "date"}.get(column or "", column)
    answer: Any
    if op == "count":
        answer = len(chosen)
    elif op in ("sum", "average"):
        values = [r[key] for r in chosen]
        answer = round(sum(values), 2) if op == "sum" else round(sum(values) / len(values), 2)
    elif op in ("max", "min"):
        best = (max if op == "max" else min)(r[key] for r in chosen)
        answer = best.isoformat() if isinstance(best, dt.date) else best
    elif op == "list":
        label = spec.get("label") or _LABELS[spec["table"]]
        answer = {r[label] for r in chosen}
    else:
        group = spec["group"]
        answer = {}
        for r in chosen:
            answer[r[group]] = answer.get(r[group], 0) + 1
    return Question(item["kind"], fill(item["question"]), answer)


def exact(expected: Any, got: Any) -> bool:
    """Whether a computed result equals the known answer: numbers to the cent, lists as sets, groups as dicts."""
    if isinstance(expected, set):
        if isinstance(got, str):  # one name: the one winner of an extreme
            return expected == {got}
        return isinstance(got, list) and set(got) == expected and len(got) == len(expected)
    if isinstance(expected, dict):
        return isinstance(got, dict) and got == expected
    if isinstance(expected, (int, float)) and isinstance(got, (int, float)):
        return abs(float(expected) - float(got)) < 0.005
    return isinstance(expected, str) and expected == got


def run(seeds: list[int], log: Callable[[str], None] = lambda s: None, spec_file: Path | None = None
        ) -> dict[str, Any]:
    """Ask every seed's questions; the share of exact results per kind and in all."""
    from rag.config import HearthConfig
    from rag.service import Hearth

    per_kind: dict[str, list[bool]] = {}
    misses = []
    seconds = []
    for seed in seeds:
        with tempfile.TemporaryDirectory() as tmp:
            docs = Path(tmp) / "docs"
            docs.mkdir()
            questions = make_documents(docs, seed, spec_file)
            hearth = Hearth(HearthConfig(data_dir=Path(tmp) / "data", n_threads=2, embed_threads=2))
            hearth.ingest([docs])
            for q in questions:
                t0 = time.perf_counter()
                result = hearth.table_answer(q.text)
                seconds.append(time.perf_counter() - t0)
                ok = result is not None and exact(q.answer, result.result)
                per_kind.setdefault(q.kind, []).append(ok)
                if not ok:
                    misses.append({"seed": seed, "question": q.text,
                                   "got": None if result is None else result.to_json()["result"]})
                log(f"seed {seed} {'exact' if ok else 'MISS '} {q.text}")
            hearth.close()
    total = [ok for oks in per_kind.values() for ok in oks]
    return {
        "seeds": seeds,
        "kinds": {k: {"questions": len(v), "exact": sum(v), "share": round(sum(v) / len(v), 3)}
                  for k, v in per_kind.items()},
        "questions": len(total), "exact": sum(total), "share": round(sum(total) / len(total), 3),
        "median_ms": round(sorted(seconds)[len(seconds) // 2] * 1000, 1), "misses": misses,
        "load": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=5, help="number of generated workbooks (seeds 1..N)")
    parser.add_argument("--questions", type=Path, default=None,
                        help="a spec file of other questions (bench/data/table_questions_heldout.json)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = run(list(range(1, args.seeds + 1)), log=lambda s: print(s, flush=True) if not args.json else None,
                 spec_file=args.questions)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
        return
    print(f"\n{'kind':<10} {'questions':>9} {'exact':>6} {'share':>6}")
    for kind, row in report["kinds"].items():
        print(f"{kind:<10} {row['questions']:>9} {row['exact']:>6} {row['share']:>6.3f}")
    print(f"{'all':<10} {report['questions']:>9} {report['exact']:>6} {report['share']:>6.3f}")
    print(f"median time per question {report['median_ms']} ms; load average {report['load']:.2f}")


if __name__ == "__main__":
    main()
