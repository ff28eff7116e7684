"""Not found on the real stack (rag/abstain.py): the default chat and embedding models, five office notes,
ten questions they answer and ten about the same office they do not. Hearth must say "not found" to the
second kind and keep the first kind's replies, which must hold the answer (a minute or so on 2 cores).

The notes and questions were written for this test, not taken from the evaluation the bounds were chosen on.
A second office (OFFICE_2: purchasing, security, kitchen, leave, visitors) was written later, after the
bounds were last chosen, and run once as it stands here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.notes import write_notes

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


NOTES_2 = {
    "purchasing.md": "# Purchasing\n\nOrders up to EUR 1,000 can be placed by any team lead through the purchasing "
                     "system. Orders above that amount need a second signature from the finance manager, Ingrid "
                     "Solberg. Office supplies are ordered every Tuesday from Papyrus GmbH. Delivery usually takes "
                     "three working days.\n",
    "security.md": "# Information security\n\nLaptops lock automatically after 5 minutes without use. Passwords must "
                   "be at least 14 characters long and are changed once a year. Lost devices must be reported to "
                   "security@example.org within one hour. USB sticks from unknown sources must not be plugged in. "
                   "The security training is repeated every September.\n",
    "kitchen.md": "# Kitchen and coffee\n\nThe coffee machine on the second floor is descaled every Friday by the "
                  "facilities team. Milk and fruit are delivered on Mondays and Thursdays. The dishwasher is started "
                  "by whoever leaves last. Food left in the fridge is thrown away on Friday afternoon.\n",
    "leave.md": "# Annual leave\n\nFull-time employees have 28 days of paid leave a year. Leave requests are entered "
                "in the HR portal at least two weeks in advance and approved by the line manager. Up to five unused "
                "days can be carried over to the next year; they expire on 31 March. Parental leave is handled by "
                "Tomas Berg in HR.\n",
    "visitors.md": "# Visitors\n\nVisitors sign in at the reception desk and wear a visitor badge at all times. The "
                   "host collects the visitor from the reception. Visitor parking is on level -1, spaces 40 to 48. "
                   "The reception is staffed from 8:00 to 17:00.\n",
}
ANSWERABLE_2 = [
    ("Who must co-sign orders above EUR 1,000?", "Ingrid"),
    ("How long must passwords be?", "14"),
    ("When is the coffee machine descaled?", "Friday"),
    ("How many days of paid leave do full-time employees get?", "28"),
    ("Where can visitors park?", "-1"),
    ("How many unused leave days can be carried over?", "five"),
    ("Within what time must a lost laptop be reported?", "hour"),
    ("When is milk delivered?", "Monday"),
    ("Which company supplies office supplies?", "Papyrus"),
    ("When is the reception staffed?", "8:00"),
]
UNANSWERABLE_2 = [
    "What is the budget for the summer party?",
    "Who is the data protection officer?",
    "How many sick days can I take without a doctor's note?",
    "What is the guest Wi-Fi network called?",
    "Which airline do we book for business trips?",
    "How much does a parking permit for employees cost?",
    "When is the next fire drill?",
    "What is the company's VAT number?",
    "Who cleans the meeting rooms?",
    "How do I request a second monitor?",
]
# Measured when written. First office: 1 withheld ("Who creates the accounts…", evidence 0.52), 8 right, 1
# invented ("When is the office closed for Christmas?" -> the weekday closing time). Second office: 1 withheld
# (the model itself said "The documents do not say." to the lost laptop, whose note says "devices"), 9 right,
# none invented. One question of slack each way.
OFFICES = {"first": (NOTES, ANSWERABLE, UNANSWERABLE), "second": (NOTES_2, ANSWERABLE_2, UNANSWERABLE_2)}


@pytest.mark.slow
@pytest.mark.parametrize("office", sorted(OFFICES))
def test_the_real_models_say_not_found_only_where_the_notes_do_not_answer(tmp_path, office):
    from inference.llm import LlamaCppModel
    from inference.models import DEFAULT_CHAT_MODEL, chat_model_path
    from rag.service import Hearth, HearthConfig

    notes_text, answerable, unanswerable = OFFICES[office]
    demo_cache = ROOT / ".data" / "demo" / "cache"  # the demo's assembled model file, when `make demo` made one
    cache = demo_cache if (demo_cache / "models").is_dir() else tmp_path / "cache"
    model = LlamaCppModel(chat_model_path(DEFAULT_CHAT_MODEL, cache), n_ctx=4096, n_threads=2)
    hearth = Hearth(HearthConfig(data_dir=tmp_path / "data", n_threads=2, embed_threads=2), chat_model=model)
    assert hearth.ingest([write_notes(tmp_path / "notes", notes_text)]).added == len(notes_text)

    answered = {q: (hearth.ask(q).to_json(), fact) for q, fact in answerable}
    withheld = [q for q, (out, _) in answered.items() if out["abstained"]]
    right = [q for q, (out, fact) in answered.items() if not out["abstained"] and fact.lower() in out["answer"].lower()]
    invented = [q for q in unanswerable if not hearth.ask(q).to_json()["abstained"]]
    assert len(withheld) <= 2, withheld
    assert len(right) >= 7, {q: answered[q][0]["answer"] for q in answered if q not in right}
    assert len(invented) <= 2, invented
