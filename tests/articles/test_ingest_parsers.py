"""The file parsers behind `manage.py import_kb`: every format's happy path and every rejected input.

Fixture files are written into tmp_path by each test (PDFs drawn with reportlab), so the tests
need no shared data and no database.
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from pypdf import PdfWriter
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import getSampleStyleSheet
from reportlab.pdfgen import canvas
from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate

from articles.ingest import IngestError, ParsedArticle, parse_path, slugify
from articles.ingest.common import normalise_body


def write(path: Path, text: str, *, newline: str = "\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.replace("\n", newline).encode("utf-8"))
    return path


def error_of(path: Path) -> IngestError:
    with pytest.raises(IngestError) as caught:
        parse_path(path)
    return caught.value


# --- common -------------------------------------------------------------------------------------


def test_slugify_folds_accents_and_keeps_other_scripts():
    assert slugify("  Café opening hours (2024)! ") == "cafe-opening-hours-2024"
    assert slugify("退货政策") == "退货政策"
    assert slugify("a" * 60 + " " + "b" * 60) == "a" * 60


def test_normalise_body_makes_one_blank_line_between_paragraphs():
    raw = "First line   \r\nsecond line\r\n\r\n\r\n\r\n  \r\nNext para\t\r\n\r\n"
    assert normalise_body(raw) == "First line\nsecond line\n\nNext para"


def test_ingest_error_text_names_file_and_location():
    error = IngestError(Path("/x/faq.csv"), "row 3", "empty body")
    assert str(error) == "faq.csv, row 3: empty body"
    assert (error.path, error.location, error.message) == (Path("/x/faq.csv"), "row 3", "empty body")
    assert str(IngestError(Path("a.pdf"), None, "encrypted")) == "a.pdf: encrypted"


# --- JSON ---------------------------------------------------------------------------------------


def test_json_list_with_defaults_and_aliases(tmp_path):
    path = write(tmp_path / "faq.json", json.dumps([
        {"ref": "returns", "title": "Returns", "body": "Within 30 days.\r\n\r\n\r\nKeep the receipt.  ",
         "updated_at": "2024-03-05", "source": "web", "source_uri": "https://shop.example/returns"},
        {"question": "What are your opening hours?", "answer": "9am to 5pm."},
    ]))
    assert parse_path(path) == [
        ParsedArticle(ref="returns", title="Returns", body="Within 30 days.\n\nKeep the receipt.", source="web",
                      source_uri="https://shop.example/returns", updated_at=dt.date(2024, 3, 5),
                      location="faq.json item 1"),
        ParsedArticle(ref="what-are-your-opening-hours", title="What are your opening hours?", body="9am to 5pm.",
                      source="faq", source_uri="faq.json", updated_at=None, location="faq.json item 2"),
    ]


def test_json_object_with_articles_key(tmp_path):
    path = write(tmp_path / "kb.json", json.dumps({"articles": [{"title": "Hours", "body": "9-5", "ref": 12}]}))
    [article] = parse_path(path)
    assert (article.ref, article.title, article.body) == ("12", "Hours", "9-5")


def test_json_syntax_error_names_line_and_column(tmp_path):
    path = write(tmp_path / "faq.json", '[\n  {"title": "a", "body": "b"},\n  {"title": "c" "body": "d"}\n]')
    assert str(error_of(path)) == "faq.json, line 3 column 17: invalid JSON: Expecting ',' delimiter"


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([{"title": "a", "body": "b"}, {"body": "x"}], "faq.json, item 2: missing title"),
        ([{"title": "a", "body": "b"}, {"title": "c", "answer": "  \n "}], "faq.json, item 2: empty body"),
        ([{"title": "a", "body": "b", "updated_at": "2024-02-30"}],
         "faq.json, item 1: field 'updated_at': not a valid date"),
        ([{"title": "a", "body": "b", "updated_at": "05/03/2024"}],
         "faq.json, item 1: field 'updated_at': expected YYYY-MM-DD"),
        ([{"title": "a", "body": "b", "source": "blog"}], "faq.json, item 1: unknown source 'blog'"),
        ([{"title": "a", "body": "b"}, "oops"], "faq.json, item 2: expected an object"),
        ({"items": []}, 'faq.json: expected a list of articles or an object with key "articles"'),
    ],
)
def test_json_bad_records_name_the_item(tmp_path, items, expected):
    path = write(tmp_path / "faq.json", json.dumps(items))
    assert str(error_of(path)).startswith(expected)


def test_json_duplicate_refs_name_both_items(tmp_path):
    path = write(tmp_path / "faq.json", json.dumps([
        {"title": "Shipping", "body": "a"}, {"title": "Hours", "body": "b"}, {"title": "Shipping!", "body": "c"},
    ]))
    assert str(error_of(path)) == "faq.json, item 3: duplicate ref 'shipping' (also used by faq.json item 1)"


# --- CSV ----------------------------------------------------------------------------------------


def test_csv_rows_with_bom_crlf_and_multiline_cells(tmp_path):
    text = (
        "\ufeffRef,Question,Answer,updated_at,source\n"
        'hours,Opening hours,"Mon-Fri 9-5.\n\n\n\nSat 10-4.   ",2024-01-31,\n'
        ",,,,\n"  # blank spacer row: skipped, but still counted
        "ship,Shipping,Free over £50.,,web\n"
    )
    path = write(tmp_path / "faq.csv", text, newline="\r\n")
    assert parse_path(path) == [
        ParsedArticle(ref="hours", title="Opening hours", body="Mon-Fri 9-5.\n\nSat 10-4.", source="faq",
                      source_uri="faq.csv", updated_at=dt.date(2024, 1, 31), location="faq.csv row 2"),
        ParsedArticle(ref="ship", title="Shipping", body="Free over £50.", source="web",
                      source_uri="faq.csv", updated_at=None, location="faq.csv row 4"),
    ]


@pytest.mark.parametrize(
    ("header", "missing"), [("ref,body\n", "title"), ("question,text\n", "body")]
)
def test_csv_missing_column_is_named(tmp_path, header, missing):
    path = write(tmp_path / "faq.csv", header + "a,b\n")
    alias = "question" if missing == "title" else "answer"
    assert str(error_of(path)) == f"faq.csv, row 1: missing column '{missing}' (or '{alias}')"


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ("c,Title,   ,,", "faq.csv, row 3: empty body"),
        ("c,,Body,,", "faq.csv, row 3: missing title"),
        ("c,Title,Body,2024-13-01,", "faq.csv, row 3: field 'updated_at': not a valid date"),
        ("c,Title,Body,,intranet", "faq.csv, row 3: unknown source 'intranet'"),
        ("a,Title,Body,,", "faq.csv, row 3: duplicate ref 'a' (also used by faq.csv row 2)"),
    ],
)
def test_csv_bad_rows_name_the_row(tmp_path, row, expected):
    path = write(tmp_path / "faq.csv", f"ref,title,body,updated_at,source\na,First,Fine,,\n{row}\n")
    assert str(error_of(path)).startswith(expected)


def test_csv_row_numbers_count_records_not_physical_lines(tmp_path):
    path = write(tmp_path / "faq.csv", 'title,body\nA,"line one\nline two\nline three"\nB,\n')
    assert str(error_of(path)) == "faq.csv, row 3: empty body (need 'body' or 'answer')"


def test_csv_not_utf8_is_rejected(tmp_path):
    path = tmp_path / "faq.csv"
    path.write_bytes("title,body\nCafé,Open\n".encode("latin-1"))
    assert "faq.csv: not UTF-8 text" in str(error_of(path))


# --- Markdown -----------------------------------------------------------------------------------


def test_markdown_front_matter(tmp_path):
    path = write(tmp_path / "manual" / "warranty.md", (
        "---\nref: '0012'\ntitle: Warranty terms\nupdated_at: 2023-11-02\nsource_uri: https://kb/warranty\n---\n"
        "# Warranty terms\n\nTwo years on all appliances.   \n\n\n\n## Exclusions\n\nWear and tear.\n"
    ), newline="\r\n")
    [article] = parse_path(path)
    assert article == ParsedArticle(
        ref="0012", title="Warranty terms",
        # the title came from front matter, so the heading is content and stays
        body="# Warranty terms\n\nTwo years on all appliances.\n\n## Exclusions\n\nWear and tear.",
        source="manual", source_uri="https://kb/warranty", updated_at=dt.date(2023, 11, 2), location="warranty.md",
    )


def test_markdown_title_from_first_heading_is_removed_from_body(tmp_path):
    path = write(tmp_path / "store-hours.markdown", (
        "Intro line.\n\n```sh\n# not a heading\n```\n\n# Store hours #\n\nOpen 9-5.\n"
    ))
    [article] = parse_path(path)
    assert (article.ref, article.title, article.source, article.updated_at) == (
        "store-hours", "Store hours", "manual", None)
    assert article.body == "Intro line.\n\n```sh\n# not a heading\n```\n\nOpen 9-5."


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("---\ntitle: T\nupdated_at: 2024-02-30\n---\nBody",
         "faq.md, front matter: field 'updated_at': not a valid date"),
        ("---\ntitle: T\nsource: wiki\n---\nBody", "faq.md, front matter: unknown source 'wiki'"),
        ("---\ntitle: T\n  bad: x\n---\nBody", "faq.md, line 3: invalid YAML: mapping values are not allowed"),
        ("Just text, no heading.", "faq.md: no title"),
        ("# Only a title\n\n   \n", "faq.md: empty body"),
    ],
)
def test_markdown_bad_input(tmp_path, text, expected):
    assert str(error_of(write(tmp_path / "faq.md", text))).startswith(expected)


# --- PDF ----------------------------------------------------------------------------------------


def build_policy_pdf(path: Path, *, title: str = "Refund policy 2024") -> Path:
    styles = getSampleStyleSheet()
    document = SimpleDocTemplate(str(path), pagesize=A4, title=title)
    document.build([
        Paragraph("Refund policy", styles["Title"]),
        Paragraph("Customers may return any unused item within thirty days of delivery for a full refund "
                  "to the original payment method, provided the item is in its original packaging.", styles["Normal"]),
        Paragraph("Refunds are processed within five business days.", styles["Normal"]),
        Paragraph("• Sale items are final", styles["Normal"]),
        Paragraph("• Gift cards cannot be returned", styles["Normal"]),
        PageBreak(),
        Paragraph("Contact", styles["Heading2"]),
        Paragraph("Email help@example.com on weekdays.", styles["Normal"]),
    ])
    return path


def set_pdf_metadata(path: Path, metadata: dict[str, str]) -> None:
    writer = PdfWriter(clone_from=str(path))
    writer.add_metadata(metadata)
    writer.write(str(path))


def test_pdf_pages_become_paragraphs_with_metadata(tmp_path):
    path = build_policy_pdf(tmp_path / "refund-policy.pdf")
    set_pdf_metadata(path, {"/ModDate": "D:20240305120000Z", "/CreationDate": "D:20200101000000Z"})
    [article] = parse_path(path)
    assert (article.ref, article.title, article.source, article.source_uri, article.location) == (
        "refund-policy", "Refund policy 2024", "pdf", "refund-policy.pdf", "refund-policy.pdf")
    assert article.updated_at == dt.date(2024, 3, 5)
    assert article.body == (
        "Refund policy\n\n"
        "Customers may return any unused item within thirty days of delivery for a full refund to the original "
        "payment method, provided the item is in its original packaging.\n\n"
        "Refunds are processed within five business days.\n\n"
        "- Sale items are final\n- Gift cards cannot be returned\n\n"
        "Contact\n\n"
        "Email help@example.com on weekdays."
    )


def test_pdf_title_falls_back_to_first_line_and_joins_hyphenated_words(tmp_path):
    path = tmp_path / "warranty.pdf"
    pdf = canvas.Canvas(str(path), pagesize=A4)  # reportlab's default title is "untitled": a placeholder
    pdf.setFont("Helvetica-Bold", 16)
    pdf.drawString(72, 780, "Warranty")
    pdf.setFont("Helvetica", 11)
    for index, line in enumerate([
        "Every appliance carries a two year warranty against manufac-",
        "turing defects, starting on the day of delivery to the customer",
        "and covering parts and labour.",
    ]):
        pdf.drawString(72, 740 - 14 * index, line)
    pdf.save()
    set_pdf_metadata(path, {"/ModDate": "garbage", "/CreationDate": "D:20221224"})
    [article] = parse_path(path)
    assert article.title == "Warranty"
    assert article.updated_at == dt.date(2022, 12, 24)  # a malformed ModDate falls back to CreationDate
    assert article.body == (
        "Every appliance carries a two year warranty against manufacturing defects, starting on the day "
        "of delivery to the customer and covering parts and labour."
    )


def test_pdf_sentence_running_over_a_page_break_is_rejoined(tmp_path):
    path = tmp_path / "delivery.pdf"
    pdf = canvas.Canvas(str(path))
    pdf.setTitle("Delivery")
    pdf.drawString(72, 700, "Orders placed before noon are shipped the same day and")
    pdf.drawString(72, 30, "3")  # page number: furniture, not content
    pdf.showPage()
    pdf.drawString(72, 700, "arrive within two working days.")
    pdf.drawString(72, 680, "Express delivery costs extra.")
    pdf.save()
    [article] = parse_path(path)
    assert article.body == (
        "Orders placed before noon are shipped the same day and arrive within two working days.\n\n"
        "Express delivery costs extra."
    )


def test_pdf_first_line_of_a_paragraph_is_title_but_stays_in_body(tmp_path):
    path = tmp_path / "note.pdf"
    pdf = canvas.Canvas(str(path))
    pdf.drawString(72, 700, "All stores close early on Christmas Eve, at 3pm, and stay")
    pdf.drawString(72, 686, "closed on Christmas Day.")
    pdf.drawString(72, 660, "Online orders continue as usual.")
    pdf.save()
    [article] = parse_path(path)
    assert article.title == "All stores close early on Christmas Eve, at 3pm, and stay"
    assert article.body == (
        "All stores close early on Christmas Eve, at 3pm, and stay closed on Christmas Day.\n\n"
        "Online orders continue as usual."
    )


def test_pdf_with_password_is_rejected(tmp_path):
    path = tmp_path / "secret.pdf"
    pdf = canvas.Canvas(str(path), encrypt="hunter2")
    pdf.drawString(72, 700, "Confidential pricing")
    pdf.save()
    assert str(error_of(path)) == "secret.pdf: encrypted PDF needs a password; export an unprotected copy"


def test_corrupt_pdf_is_rejected(tmp_path):
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.4\nthis is not really a pdf\n")
    assert str(error_of(path)).startswith("broken.pdf: unreadable PDF")


def test_pdf_damaged_page_is_named(tmp_path):
    from pypdf.generic import NameObject, StreamObject

    path = build_policy_pdf(tmp_path / "policy.pdf")
    writer = PdfWriter(clone_from=str(path))
    damaged = StreamObject()
    damaged.set_data(b"not deflated at all")  # raw bytes claiming to be deflated
    damaged[NameObject("/Filter")] = NameObject("/FlateDecode")
    writer.pages[1][NameObject("/Contents")] = writer._add_object(damaged)
    writer.write(str(path))
    assert str(error_of(path)).startswith("policy.pdf, page 2: damaged content stream")


def test_pdf_without_text_is_rejected(tmp_path):
    path = tmp_path / "scan.pdf"
    pdf = canvas.Canvas(str(path))
    pdf.rect(100, 100, 200, 200, fill=1)  # a picture of a page, no text layer
    pdf.showPage()
    pdf.save()
    assert str(error_of(path)) == "scan.pdf: no extractable text (a scanned PDF needs OCR before import)"


# --- HTML ---------------------------------------------------------------------------------------

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Opening hours | Example Shop</title>
<meta name="kb:ref" content="hours-2024"><meta name="last-modified" content="2024-06-01">
<meta property="article:modified_time" content="2023-01-01T00:00:00Z">
<link rel="canonical" href="https://shop.example/hours"></head>
<body><nav><ul><li><a href="/">Home</a></li><li><a href="/shop">Shop all products</a></li></ul></nav>
<main><h1>Opening hours</h1>
<p>Our café in <b>Leeds</b> is open Monday to Friday
   from 9am to 6pm.</p>
<p>On Saturdays we open from 10am to 4pm; see <a href="/holidays">holiday hours</a>.</p>
<ul><li>Closed on Sundays</li><li>Closed on public holidays</li></ul>
</main>
<footer><p>Copyright 2019 Example Shop Ltd. Updated 3 March 2021.</p></footer></body></html>"""


def test_html_main_content_and_metadata(tmp_path):
    [article] = parse_path(write(tmp_path / "hours.html", PAGE))
    assert article == ParsedArticle(
        ref="hours-2024", title="Opening hours",
        body=("Our café in Leeds is open Monday to Friday from 9am to 6pm.\n\n"
              "On Saturdays we open from 10am to 4pm; see holiday hours.\n\n"
              "- Closed on Sundays\n- Closed on public holidays"),
        source="web", source_uri="https://shop.example/hours", updated_at=dt.date(2024, 6, 1),
        location="hours.html",
    )


def test_html_short_answer_page_keeps_its_structure(tmp_path):
    # Under 250 characters trafilatura would by default give up and return the whole page, menu included.
    page = ("<html><head><title>Returns</title></head><body><nav><a href='/'>Home</a></nav>"
            "<main><h1>Returns</h1><p>Return items within 30 days.</p><p>Keep the <a href='/r'>receipt</a>.</p>"
            "</main></body></html>")
    [article] = parse_path(write(tmp_path / "returns.html", page))
    assert (article.title, article.body) == ("Returns", "Return items within 30 days.\n\nKeep the receipt.")


def test_html_defaults_come_from_file_and_open_graph_date(tmp_path):
    page = (PAGE.replace('<meta name="kb:ref" content="hours-2024">', "")
                .replace('<meta name="last-modified" content="2024-06-01">', "")
                .replace('<link rel="canonical" href="https://shop.example/hours">', ""))
    [article] = parse_path(write(tmp_path / "Store Hours.htm", page))
    assert (article.ref, article.source_uri, article.updated_at) == (
        "Store Hours", "Store Hours.htm", dt.date(2023, 1, 1))


def test_html_date_in_text_is_not_guessed(tmp_path):
    page = PAGE.replace('<meta name="last-modified" content="2024-06-01">', "").replace(
        '<meta property="article:modified_time" content="2023-01-01T00:00:00Z">', "")
    [article] = parse_path(write(tmp_path / "hours.html", page))
    assert article.updated_at is None


def test_html_invalid_last_modified_names_the_field(tmp_path):
    page = PAGE.replace('content="2024-06-01"', 'content="sometime in June"')
    assert str(error_of(write(tmp_path / "hours.html", page))).startswith(
        "hours.html: field 'last-modified': expected YYYY-MM-DD")


@pytest.mark.parametrize(
    "body",
    [
        "<nav><a href='/'>Home</a> <a href='/blog'>Blog</a> <a href='/contact'>Contact us</a></nav>",
        "",
    ],
)
def test_html_without_main_content_is_rejected(tmp_path, body):
    page = f"<html><head><title>Menu</title></head><body>{body}</body></html>"
    assert str(error_of(write(tmp_path / "menu.html", page))) == (
        "menu.html: no main content found (only navigation or an empty page)")


# --- dispatch and directories -------------------------------------------------------------------


def test_unsupported_suffix_is_rejected(tmp_path):
    assert str(error_of(write(tmp_path / "notes.docx", "x"))).startswith("notes.docx: unsupported file type '.docx'")


def test_missing_file_is_rejected(tmp_path):
    assert str(error_of(tmp_path / "gone.csv")) == "gone.csv: no such file"


def make_kb_directory(root: Path) -> None:
    # Written in an order unrelated to the expected one, so sorting is what makes the result stable.
    write(root / "web" / "hours.html", PAGE)
    write(root / "b.csv", "ref,title,body\nb1,B one,Body\nb2,B two,Body\n")
    write(root / "a.json", json.dumps([{"ref": "a1", "title": "A", "body": "Body"}]))
    write(root / "manual" / "z.md", "# Z\n\nBody")
    build_policy_pdf(root / "manual" / "policy.PDF")
    write(root / "README.txt", "not an article")
    write(root / ".git" / "x.json", "not even json")
    write(root / ".~lock.b.csv", "editor lock file")


def test_directory_is_parsed_recursively_in_sorted_order(tmp_path):
    make_kb_directory(tmp_path / "kb")
    articles = parse_path(tmp_path / "kb")
    assert [(article.location, article.ref) for article in articles] == [
        ("a.json item 1", "a1"),
        ("b.csv row 2", "b1"),
        ("b.csv row 3", "b2"),
        ("policy.PDF", "policy"),
        ("z.md", "z"),
        ("hours.html", "hours-2024"),
    ]
    assert parse_path(tmp_path / "kb") == articles


def test_duplicate_ref_across_files_names_both(tmp_path):
    write(tmp_path / "a.json", json.dumps([{"ref": "hours", "title": "Hours", "body": "9-5"}]))
    write(tmp_path / "b" / "hours.md", "# Hours\n\n9-6")
    assert str(error_of(tmp_path)) == "hours.md: duplicate ref 'hours' (also used by a.json item 1)"


def test_error_in_one_file_of_a_directory_names_that_file(tmp_path):
    write(tmp_path / "a.json", json.dumps([{"title": "Hours", "body": "9-5"}]))
    write(tmp_path / "b.csv", "title,body\nShipping,\n")
    assert str(error_of(tmp_path)).startswith("b.csv, row 2: empty body")
