"""Drift: a source change to an article staff edited in the console is held for review, never written over it."""
import pytest

from articles.models import Article, AuditAction, DriftItem, DriftStatus, VersionReason
from articles.selectors import search
from articles.services import StaleVersionError, article_edit
from articles.sources import source_create
from articles.sources_drift import DriftStateError, drift_keep, drift_merge, drift_take_source
from tests.articles.conftest import run_sync
from tests.factories import article_audit
from tests.support.page_server import html_page

PATH = "/help/fares.html"
ORIGINAL = "A single adult ticket costs 18 euro. Children under five travel free."
CONSOLE = "A single adult ticket costs 22 euro. Children under five travel free."
SOURCE_NEW = "A single adult ticket costs 24 euro. Children under five travel free. Dogs travel free."


@pytest.fixture
def edited(loopback_kb, page_server, django_user_model):
    """An article synced from the website, then edited by staff in the console, then changed on the website."""
    page_server.set(PATH, html_page("Fares", ORIGINAL))
    source = source_create(knowledge_base=loopback_kb, name="Website", kind="urls", location=page_server.url(PATH))
    run_sync(source)
    article = Article.objects.get(knowledge_base=loopback_kb, external_ref="help-fares")
    staff = django_user_model.objects.create_user("rita", password="x")
    article_edit(article=article, expected_version_id=article.current_version_id, body=CONSOLE, actor=staff)
    from articles.indexing import article_reindex

    article_reindex(article_id=article.pk)
    page_server.set(PATH, html_page("Fares", SOURCE_NEW))
    sync = run_sync(source)
    article.refresh_from_db()
    return {"kb": loopback_kb, "source": source, "article": article, "staff": staff, "sync": sync,
            "server": page_server}


def top_text(kb):
    return search(knowledge_base=kb, question="how much is an adult ticket")[0].chunk_text


@pytest.mark.django_db
def test_source_change_after_console_edit_is_held_and_retrieval_keeps_console_text(edited):
    article, kb = edited["article"], edited["kb"]
    assert edited["sync"].counts["held"] == 1 and edited["sync"].counts["changed"] == 0
    assert article.current_version.body == CONSOLE  # no version from the source
    item = DriftItem.objects.get(article=article)
    assert item.status == DriftStatus.PENDING and item.source_body == SOURCE_NEW
    assert item.console_version_id == article.current_version_id and item.page is not None
    assert article_audit(article.pk).filter(action=AuditAction.DRIFT_HELD).count() == 1
    assert top_text(kb) == CONSOLE

    # The same source text again holds nothing new; a further change replaces the pending text.
    assert run_sync(edited["source"]).counts["held"] == 0
    edited["server"].set(PATH, html_page("Fares", SOURCE_NEW + " Bicycles cost four euro."))
    assert run_sync(edited["source"]).counts["held"] == 1
    assert DriftItem.objects.filter(article=article).count() == 1
    assert DriftItem.objects.get(article=article).source_body.endswith("Bicycles cost four euro.")


@pytest.mark.django_db
def test_keep_leaves_the_console_text_and_writes_an_audit_row(edited):
    item = DriftItem.objects.get(article=edited["article"])
    drift_keep(item=item, actor=edited["staff"], note="our price is right")
    item.refresh_from_db()
    assert item.status == DriftStatus.KEPT and item.decided_by == edited["staff"] and item.result_version is None
    assert Article.objects.get(pk=edited["article"].pk).current_version.body == CONSOLE
    audit = article_audit(edited["article"].pk).get(action=AuditAction.DRIFT_KEPT)
    assert audit.actor == edited["staff"] and audit.detail["note"] == "our price is right"
    assert run_sync(edited["source"]).counts["held"] == 0  # the kept source text is not raised again
    with pytest.raises(DriftStateError, match="already decided"):
        drift_keep(item=item, actor=edited["staff"])


@pytest.mark.django_db
def test_take_source_writes_the_source_text_reindexes_and_later_changes_apply_directly(edited):
    item = DriftItem.objects.get(article=edited["article"])
    drift_take_source(item=item, actor=edited["staff"])
    item.refresh_from_db()
    article = Article.objects.get(pk=edited["article"].pk)
    assert item.status == DriftStatus.TAKEN and item.result_version_id == article.current_version_id
    assert article.current_version.body == SOURCE_NEW and article.indexed_version_id == article.current_version_id
    assert top_text(edited["kb"]).startswith("A single adult ticket costs 24 euro")
    assert article_audit(article.pk).get(action=AuditAction.DRIFT_TAKEN).detail["version"] == article.current_version_id

    edited["server"].set(PATH, html_page("Fares", "A single adult ticket costs 25 euro."))
    sync = run_sync(edited["source"])
    assert (sync.counts["changed"], sync.counts["held"]) == (1, 0)


@pytest.mark.django_db
def test_merge_saves_staff_text_and_later_source_changes_are_held_again(edited):
    item = DriftItem.objects.get(article=edited["article"])
    merged = "A single adult ticket costs 22 euro. Children under five travel free. Dogs travel free."
    drift_merge(item=item, title="Fares", body=merged, actor=edited["staff"])
    item.refresh_from_db()
    article = Article.objects.get(pk=edited["article"].pk)
    assert item.status == DriftStatus.MERGED and article.current_version.body == merged
    assert article.current_version.reason == VersionReason.EDIT
    assert article_audit(article.pk).filter(action=AuditAction.DRIFT_MERGED, actor=edited["staff"]).exists()
    assert "Dogs travel free" in top_text(edited["kb"])

    edited["server"].set(PATH, html_page("Fares", "A single adult ticket costs 26 euro."))
    assert run_sync(edited["source"]).counts["held"] == 1


@pytest.mark.django_db
def test_deciding_refuses_when_the_article_changed_since_it_was_held(edited):
    article = edited["article"]
    article_edit(article=article, expected_version_id=article.current_version_id, body=CONSOLE + " Edited again.")
    item = DriftItem.objects.get(article=article)
    with pytest.raises(StaleVersionError):
        drift_take_source(item=item, actor=edited["staff"])
    item.refresh_from_db()
    assert item.status == DriftStatus.PENDING
    assert not article_audit(article.pk).filter(action=AuditAction.DRIFT_TAKEN).exists()


@pytest.mark.django_db
def test_a_statement_removed_while_resolving_a_conflict_is_named_when_the_source_brings_it_back(loopback_kb, page_server):
    page_server.set(PATH, html_page("Fares", ORIGINAL))
    source = source_create(knowledge_base=loopback_kb, name="Website", kind="urls", location=page_server.url(PATH))
    run_sync(source)
    article = Article.objects.get(knowledge_base=loopback_kb, external_ref="help-fares")
    # A reviewer resolving a conflict replaced the 18 euro price.
    article_edit(article=article, expected_version_id=article.current_version_id, body=CONSOLE,
                 reason=VersionReason.RESOLVE)
    page_server.set(PATH, html_page("Fares", ORIGINAL + " Bicycles cost four euro."))
    run_sync(source)
    item = DriftItem.objects.get(article=article)
    assert item.reintroduced == ["A single adult ticket costs 18 euro."]
