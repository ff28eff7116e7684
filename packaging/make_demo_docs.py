"""Write assets/demo/travel-policy.pdf, the demo company's three-page travel and expenses policy.

Alder & Finch Consulting is invented; its other demo documents (it-handbook.html, onboarding.md)
are written by hand next to the PDF and share its facts (extensions, portals, addresses).

    .venv/bin/python packaging/make_demo_docs.py [--out assets/demo/travel-policy.pdf]

The output is byte-for-byte reproducible: fixed creation date, fixed producer, no random IDs.
Needs fpdf2 (in Hearth's `test` extra). Core PDF fonts only know Latin-1, so the text avoids
"€" and typographic dashes.
"""

from __future__ import annotations

import argparse
from datetime import datetime, timezone
from pathlib import Path

from fpdf import FPDF

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "assets" / "demo" / "travel-policy.pdf"
CREATED = datetime(2024, 2, 20, 9, 0, 0, tzinfo=timezone.utc)
TITLE = "Travel and Expenses Policy"

# Each page: a list of (section heading, paragraphs). Page 2 must carry the meal allowance rule.
PAGES: list[list[tuple[str, list[str]]]] = [
    [
        (
            "1. Scope",
            [
                "This policy applies to all employees, working students and contractors of Alder & Finch "
                "Consulting GmbH who travel on company business, including visits to client sites, "
                "conferences and training courses. It covers booking, transport, accommodation, meals and "
                "the reimbursement of expenses.",
                "Where a client contract sets stricter travel rules, the client's rules apply and are "
                "reimbursed as set out in that contract.",
            ],
        ),
        (
            "2. Booking through the travel desk",
            [
                "All flights, train tickets, rental cars and hotels are booked through the travel desk "
                "(travel@alderfinch.example, extension 4120). Please send your request at least 7 days "
                "before departure, together with the project code that the trip is charged to.",
                "Trips booked privately are reimbursed only if your line manager approved the booking "
                "in advance and the cost does not exceed what the travel desk would have paid.",
            ],
        ),
        (
            "3. Transport",
            [
                "Rail is the preferred means of travel for journeys of up to 4 hours; book second class, "
                "or first class for journeys over 2 hours when you work on the train.",
                "Flights under 6 hours are booked in economy class. For flights of 6 hours or longer, "
                "premium economy may be booked. Business class requires the approval of a managing partner.",
                "Taxis are reimbursed when public transport is not available, when you carry heavy "
                "equipment, or between 22:00 and 06:00.",
            ],
        ),
        (
            "4. Accommodation",
            [
                "Hotel costs are reimbursed up to EUR 150 per night, including breakfast where it is "
                "offered. In London, Paris and Zurich the cap is EUR 200 per night.",
                "The travel desk keeps a list of preferred hotels with negotiated rates near our clients' "
                "offices. Stays with friends or family are not reimbursed.",
            ],
        ),
    ],
    [
        (
            "5. Meals and daily allowance",
            [
                "The daily meal allowance is EUR 45 for travel within Germany and EUR 60 for travel abroad.",
                "The full allowance is paid for each calendar day spent entirely away from home. On the days "
                "of departure and return, half the allowance is paid.",
                "When a meal is provided by a hotel, a client or a conference, the allowance for that day "
                "is reduced: by 20 % for breakfast and by 40 % each for lunch and dinner.",
                "No receipts are needed for the meal allowance; it is claimed per day in the expense portal.",
            ],
        ),
        (
            "6. Client entertainment",
            [
                "Business meals with clients are reimbursed at cost up to EUR 70 per person. The receipt "
                "must list the names of all guests and the business purpose of the meal.",
                "Alcohol is reimbursed only as part of a client meal that your line manager approved in "
                "advance.",
            ],
        ),
        (
            "7. Insurance and safety",
            [
                "All employees are covered by the company's travel health and accident insurance while "
                "travelling on business (policy number AF-2024-117). Carry the insurance card from the "
                "travel desk with you.",
                "Travel to a country with an official travel warning requires the written approval of a "
                "managing partner. If your laptop or phone is lost or stolen on a trip, follow the IT "
                "handbook and call the IT service desk at extension 4400.",
            ],
        ),
    ],
    [
        (
            "8. Expense claims",
            [
                "Expense claims must be submitted within 30 days of the end of the trip through the expense "
                "portal (expenses.alderfinch.example). Attach a receipt for every item; paper receipts can "
                "be photographed with the portal's phone app.",
                "Claims submitted later than 30 days, or items without a receipt, are reimbursed only in "
                "exceptional cases and with the approval of the finance team.",
            ],
        ),
        (
            "9. Approval and payment",
            [
                "Every claim is approved by your line manager in the expense portal; line managers' own "
                "claims are approved by a managing partner.",
                "Approved claims are paid with the next salary payment. Claims approved by the 20th of a "
                "month are paid on the last working day of that month.",
            ],
        ),
        (
            "10. Private car use",
            [
                "When the use of a private car is approved in advance, mileage is reimbursed at EUR 0.30 "
                "per km. Parking fees and tolls are reimbursed with receipts; traffic fines are not.",
            ],
        ),
        (
            "11. Questions",
            [
                "Questions about this policy go to the finance team at finance@alderfinch.example or "
                "extension 4150.",
            ],
        ),
    ],
]


class _PolicyPDF(FPDF):
    """An A4 page with the company's running header and a page footer."""

    def header(self) -> None:
        self.set_font("Helvetica", "", 8)
        self.set_text_color(110, 110, 110)
        self.cell(0, 5, f"Alder & Finch Consulting GmbH - {TITLE}", new_x="LMARGIN", new_y="NEXT")
        self.ln(4)
        self.set_text_color(0, 0, 0)

    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("Helvetica", "", 8)
        self.set_text_color(110, 110, 110)
        self.cell(0, 5, f"Version 3.2, effective 1 March 2024 - Page {self.page_no()} of {{nb}}", align="C")
        self.set_text_color(0, 0, 0)


def build() -> bytes:
    """The policy PDF's bytes; the same on every run."""
    pdf = _PolicyPDF(format="A4")
    pdf.set_creation_date(CREATED)
    pdf.set_producer("Hearth demo document generator")
    pdf.set_creator("packaging/make_demo_docs.py")
    pdf.set_title(TITLE)
    pdf.set_author("Alder & Finch Consulting GmbH, Finance")
    pdf.set_lang("en")
    pdf.set_margins(20, 15, 20)
    pdf.set_auto_page_break(True, margin=20)
    for number, page in enumerate(PAGES, start=1):
        pdf.add_page()
        if number == 1:
            pdf.set_font("Helvetica", "B", 18)
            pdf.cell(0, 10, TITLE, new_x="LMARGIN", new_y="NEXT")
            pdf.set_font("Helvetica", "", 10)
            pdf.cell(0, 6, "Owner: Finance team. Approved by the managing partners on 20 February 2024.",
                     new_x="LMARGIN", new_y="NEXT")  # fmt: skip
            pdf.ln(4)
        for heading, paragraphs in page:
            pdf.start_section(heading)  # a PDF bookmark, so readers and Hearth see the structure
            pdf.set_font("Helvetica", "B", 12)
            pdf.cell(0, 8, heading, new_x="LMARGIN", new_y="NEXT")
            pdf.set_font("Helvetica", "", 10.5)
            for paragraph in paragraphs:
                pdf.multi_cell(0, 5.5, paragraph, new_x="LMARGIN", new_y="NEXT")
                pdf.ln(2)
            pdf.ln(2)
        if pdf.page != number:
            raise RuntimeError(f"page {number} of the policy overflowed; shorten its text")
    return bytes(pdf.output())


def main() -> None:
    """Write the demo policy PDF."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to write the PDF")
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(build())
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
