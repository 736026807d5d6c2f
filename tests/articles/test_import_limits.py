"""The bad-input set for imports: every file the database cannot hold is refused with a clean error
naming the file and the row, and a failed import into a new slug leaves no knowledge base behind."""
import json

import pytest
from django.core.management import CommandError, call_command

from articles.models import Article, AuditEvent, KnowledgeBase


def faq(**changes):
    return {"ref": "faq-1", "title": "Ticket prices", "body": "A single ticket costs 22 euros.", **changes}


# (id, file name, file text, what the message must say)
BAD_FILES = [
    ("nul-in-title", "faq.json", json.dumps([faq(title="Ticket\u0000 prices")]), "item 1: field 'title' contains a NUL"),
    ("nul-in-body", "faq.json", json.dumps([faq(), faq(ref="faq-2", body="Dogs\u0000 free")]), "item 2: field 'body' contains a NUL"),
    ("nul-in-ref", "faq.json", json.dumps([faq(ref="faq\u00001")]), "item 1: field 'ref' contains a NUL"),
    ("surrogate-in-body", "faq.json", '[{"ref": "a", "title": "t", "body": "x \\ud800 y"}]', "item 1: field 'body' contains an unpaired surrogate"),
    ("escape-in-title", "faq.json", json.dumps([faq(title="Prices \u001b[2J")]), "item 1: field 'title' contains the control character U+001B"),
    ("ref-over-200", "faq.json", json.dumps([faq(ref="r" * 201)]), "item 1: field 'ref' is 201 characters long; at most 200 fit"),
    ("title-over-500", "faq.json", json.dumps([faq(title="t" * 501)]), "item 1: field 'title' is 501 characters long; at most 500 fit"),
    ("source-uri-over-1000", "faq.json", json.dumps([faq(source_uri="https://example.org/" + "p" * 1000)]), "item 1: field 'source_uri' is 1020 characters long"),
    ("json-100k-deep", "faq.json", "[" * 100_000 + "]" * 100_000, "faq.json: nested too deeply"),
    ("csv-nul", "faq.csv", "ref,title,body\nfaq-1,Prices,costs 22\x00 euros\n", "faq.csv"),
    ("csv-long-ref", "faq.csv", "ref,title,body\nfaq-1,Prices,22 euros\n" + "r" * 300 + ",Hours,9 to 5\n", "row 3: field 'ref' is 300 characters long"),
    ("markdown-nul-title", "manual.md", "# Ticket\x00 prices\n\nA single ticket costs 22 euros.\n", "manual.md"),
]


@pytest.mark.django_db
@pytest.mark.parametrize("case", BAD_FILES, ids=[case[0] for case in BAD_FILES])
def test_bad_file_is_refused_naming_file_and_row_and_leaves_nothing(tmp_path, case):
    _, name, text, expected = case
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    with pytest.raises(CommandError) as refused:
        call_command("import_kb", "--kb", "brand-new", "--no-index", str(path))
    message = str(refused.value)
    assert message.startswith("Import failed, nothing was written: ")
    assert expected in message and "Traceback" not in message
    assert not KnowledgeBase.objects.filter(slug="brand-new").exists()
    assert not Article.objects.exists() and not AuditEvent.objects.exists()


@pytest.mark.django_db
def test_failed_import_into_an_existing_knowledge_base_keeps_it_unchanged(tmp_path, kb):
    good, bad = tmp_path / "a.json", tmp_path / "b.json"
    good.write_text(json.dumps([faq()]))
    call_command("import_kb", "--kb", kb.slug, "--no-index", str(good))
    bad.write_text(json.dumps([faq(ref="faq-9", title="x\u0000")]))
    with pytest.raises(CommandError):
        call_command("import_kb", "--kb", kb.slug, "--no-index", str(good), str(bad))
    assert KnowledgeBase.objects.filter(slug=kb.slug).exists()
    assert list(Article.objects.values_list("external_ref", flat=True)) == ["faq-1"]


@pytest.mark.django_db
def test_widest_storable_values_import(tmp_path):
    path = tmp_path / "faq.json"
    path.write_text(json.dumps([faq(ref="r" * 200, title="t" * 500, body="Tabs\tand\fpage breaks\nand ünïcödé \u202e.")]))
    call_command("import_kb", "--kb", "brand-new", "--no-index", str(path))
    article = Article.objects.get()
    assert article.external_ref == "r" * 200 and len(article.title) == 500
