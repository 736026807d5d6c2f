"""agents.claims.split: articles as claims (sentences, list items, table cells, price-list rows), each an
exact substring of the body, with the heading or question it stands under.
Every case is written in new wording for these tests (no data set's sentences or names).
"""
from __future__ import annotations

from agents.claims.split import MAX_CLAIM_CHARS, split_claims


def test_table_cells_are_claims_said_of_their_row_and_column():
    from agents.claims.split import split_claims

    body = ("| Room | Price per night | Late check-out |\n|---|---|---|\n| Garden room | £120 | 1 pm |\n"
            "| Loft suite | £210 | 2 pm |\nBreakfast is served until 10:30.")
    claims = split_claims("Room rates", body)
    cells = [(c.text, c.label, c.column) for c in claims if c.label]
    assert cells == [("£120", "Garden room", "Price per night"), ("1 pm", "Garden room", "Late check-out"),
                     ("£210", "Loft suite", "Price per night"), ("2 pm", "Loft suite", "Late check-out")]
    assert all(body[c.start:c.end] == c.text for c in claims)
    assert claims[-1].text == "Breakfast is served until 10:30." and not claims[-1].label
