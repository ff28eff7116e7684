"""Not found on the real stack (rag/abstain.py): the default chat and embedding models, five office notes,
ten questions they answer and ten about the same office they do not. Hearth must say "not found" to the
second kind and keep the first kind's replies, which must hold the answer (a minute or so on 2 cores).

The notes and questions were written for this test, not taken from the evaluation the bounds were chosen on.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

NOTES = {
    "it-onboarding.md": "# IT onboarding\n\nNew staff receive a laptop on their first day from the IT desk on the "
                        "ground floor. The standard laptop is a ThinkPad T14 with 16 GB of memory. Accounts are "
                        "created by Petra Novak in the IT team two days before the start date. The first password "
                        "must be changed within 24 hours. Multi-factor authentication uses the Authenticator app "
                        "on the employee's phone.\n",
    "expenses.md": "# Expense claims\n\nExpense claims are submitted through the finance portal by the 5th of the "
                   "following month. Receipts over EUR 25 must be attached as a scan or photo. Claims above EUR 500 "
                   "need approval from the department head. Mileage for private cars is reimbursed at EUR 0.30 per "
                   "kilometre. Reimbursements are paid with the next salary.\n",
    "building.md": "# Building and safety\n\nThe office opens at 7:00 and closes at 20:00 on weekdays. The fire "
                   "assembly point is the car park behind the bakery on Linden Street. Fire drills take place twice "
                   "a year, in April and October. First-aid kits are in the kitchen on each floor; the trained first "
                   "aiders are Marek and Julia.\n",
    "meetings.md": "# Meeting rooms\n\nThere are three meeting rooms: Oak (12 seats, with a projector), Birch (6 "
                   "seats) and Pine (4 seats, for calls). Rooms are booked in the shared calendar; a booking longer "
                   "than three hours needs the office manager's approval. Leave the room tidy and switch off the "
                   "projector after use.\n",
    "remote.md": "# Working from home\n\nEmployees may work from home up to two days a week after their probation "
                 "period. Core hours are 10:00 to 15:00. The company pays a monthly home-office allowance of EUR 20. "
                 "Confidential printouts must not be taken home.\n",
}
ANSWERABLE = [  # (question, what the answer must say)
    ("Who creates the accounts of new staff?", "Petra"),
    ("How much is mileage reimbursed per kilometre?", "0.30"),
    ("Where is the fire assembly point?", "bakery"),
    ("How many seats does the Birch room have?", "6"),
    ("How much is the home-office allowance?", "20"),
    ("When do fire drills take place?", "April"),
    ("Which receipts must be attached to an expense claim?", "25"),
    ("What are the core hours when working from home?", "10:00"),
    ("What laptop do new employees get?", "T14"),
    ("Who approves claims above EUR 500?", "department head"),
]
UNANSWERABLE = [
    "What is the door code of the server room?",
    "What is the Wi-Fi password for guests?",
    "How many days of sick leave do employees get?",
    "Who is the head of the finance department?",
    "What is the parking fee in the car park?",
    "When is the office closed for Christmas?",
    "Which VPN client do we use?",
    "How much is the daily meal allowance abroad?",
    "What is the phone number of the IT desk?",
    "How often are the windows cleaned?",
]


@pytest.mark.slow
def test_the_real_models_say_not_found_only_where_the_notes_do_not_answer(tmp_path):
    from inference.llm import LlamaCppModel
    from inference.models import DEFAULT_CHAT_MODEL, chat_model_path
    from rag.service import Hearth, HearthConfig

    notes = tmp_path / "notes"
    notes.mkdir()
    for name, text in NOTES.items():
        (notes / name).write_text(text, encoding="utf-8")
    demo_cache = ROOT / ".data" / "demo" / "cache"  # the demo's assembled model file, when `make demo` made one
    cache = demo_cache if (demo_cache / "models").is_dir() else tmp_path / "cache"
    model = LlamaCppModel(chat_model_path(DEFAULT_CHAT_MODEL, cache), n_ctx=4096, n_threads=2)
    hearth = Hearth(HearthConfig(data_dir=tmp_path / "data", n_threads=2, embed_threads=2), chat_model=model)
    assert hearth.ingest([notes]).added == len(NOTES)

    answered = {q: (hearth.ask(q).to_json(), fact) for q, fact in ANSWERABLE}
    withheld = [q for q, (out, _) in answered.items() if out["abstained"]]
    right = [q for q, (out, fact) in answered.items() if not out["abstained"] and fact.lower() in out["answer"].lower()]
    invented = [q for q in UNANSWERABLE if not hearth.ask(q).to_json()["abstained"]]
    # Measured when written: 1 withheld ("Who creates the accounts…", evidence 0.52), 8 right, 1 invented
    # ("When is the office closed for Christmas?" -> the weekday closing time). One question of slack each way.
    assert len(withheld) <= 2, withheld
    assert len(right) >= 7, {q: answered[q][0]["answer"] for q in answered if q not in right}
    assert len(invented) <= 2, invented
