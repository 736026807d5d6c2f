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


BODY = ("Ask for Dr. Amani at the counter. She fits life jackets.\nOpening hours\nWe open at 08:00 on weekdays.\n"
        "Can I pay by card?\nYes, every till takes cards.\nRope splicing ......... £9 per metre\n- Ok.\n"
        "- Bring your boat papers.")


def test_sentences_headings_questions_and_list_items_become_claims_in_reading_order():
    claims = split_claims("Ropewalk Chandlery", BODY)
    assert [c.text for c in claims] == ["Ask for Dr. Amani at the counter.", "She fits life jackets.",
                                        "We open at 08:00 on weekdays.", "Yes, every till takes cards.",
                                        "Rope splicing ......... £9 per metre", "Bring your boat papers."]
    assert all(BODY[c.start:c.end] == c.text for c in claims)
    assert [c.index for c in claims] == list(range(len(claims)))
    # A short line without a sentence end heads what follows; a question is asked, not claimed, and its answer
    # carries it.
    assert claims[0].context == "Ropewalk Chandlery"
    assert claims[2].context == "Ropewalk Chandlery \u2014 Opening hours"
    assert claims[3].question == "Can I pay by card?" and claims[3].context.endswith("\u2014 Can I pay by card?")
    assert claims[4].question == ""  # answered once, by the line after it


def test_a_price_list_row_set_with_dot_leaders_is_one_claim_of_its_label():
    row = next(c for c in split_claims("Ropewalk Chandlery", BODY) if c.leader_row)
    assert row.text == "Rope splicing ......... £9 per metre"
    assert row.label.startswith("Rope splicing")


def test_a_price_list_rows_label_stops_before_the_leader():
    row = next(c for c in split_claims("Ropewalk Chandlery", BODY) if c.leader_row)
    assert row.label == "Rope splicing"


def test_a_title_that_asks_is_the_question_its_first_claims_answer():
    [answer] = split_claims("Do you sharpen skates?", "Yes, while you wait, at our Harrow Street counter.")
    assert answer.question == "Do you sharpen skates?"


def test_a_line_with_no_sentence_end_is_cut_into_bounded_claims():
    body = " ".join(f"tarpaulin {n}" for n in range(120))
    claims = split_claims("Ropewalk Chandlery", body)
    assert len(claims) > 1 and all(len(c.text) <= MAX_CLAIM_CHARS for c in claims)
    assert all(body[c.start:c.end] == c.text for c in claims)


def test_a_numbered_clauses_run_in_title_heads_its_sentences_and_is_no_claim():
    body = ("Hire terms\n4. Late returns. Boards brought back after 6 pm are charged a second day. Call us if delayed.\n"
            "5. Damage. Dents are repaired at cost.\n6. Keep it dry.")
    claims = split_claims("Surf hire", body)
    assert [c.text for c in claims] == ["Boards brought back after 6 pm are charged a second day.",
                                        "Call us if delayed.", "Dents are repaired at cost.", "Keep it dry."]
    assert [c.context for c in claims] == ["Surf hire \u2014 Late returns", "Surf hire \u2014 Late returns",
                                           "Surf hire \u2014 Damage", "Surf hire \u2014 Hire terms"]
    assert all(body[c.start:c.end] == c.text for c in claims)
