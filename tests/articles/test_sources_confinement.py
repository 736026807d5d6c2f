"""Folder sources read only under the configured roots, never another knowledge base's folder, and a
folder's bad files fail alone, each named with its reason (issue 28, findings 3 and 4)."""
import json

import pytest

from articles.models import Article, AuditAction, AuditEvent, KnowledgeBase, SourceSync, SyncStatus
from articles.sources import SourceFolderRefused, SourceInputError, source_create, source_update
from tests.articles.conftest import run_sync


def faq_file(folder, name, *entries):
    (folder / name).write_text(json.dumps([
        {"ref": ref, "question": question, "answer": answer} for ref, question, answer in entries
    ]))


@pytest.fixture
def roots(tmp_path, settings):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    faq_file(outside, "secret.json", ("faq-secret", "Secret?", "The vault code is written here."))
    settings.SOURCE_FOLDER_ROOTS = [allowed]
    return allowed, outside


def refused(kb) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(knowledge_base=kb, action=AuditAction.SOURCE_REFUSED).order_by("id"))


@pytest.mark.django_db
def test_a_folder_outside_the_roots_is_refused_and_audited(kb, roots):
    allowed, outside = roots
    with pytest.raises(SourceFolderRefused, match="outside the folders this server allows"):
        source_create(knowledge_base=kb, name="Peek", kind="folder", location=str(outside))
    with pytest.raises(SourceFolderRefused, match="outside the folders"):
        source_create(knowledge_base=kb, name="Dots", kind="folder", location=f"{allowed}/../outside")
    with pytest.raises(SourceFolderRefused, match="outside the folders"):
        source_create(knowledge_base=kb, name="Tmp", kind="folder", location="/etc")
    assert [event.detail["location"] for event in refused(kb)] == [str(outside), f"{allowed}/../outside", "/etc"]
    assert not kb.sources.exists()


@pytest.mark.django_db
def test_a_symlink_out_of_a_root_is_refused_at_save_and_at_sync(kb, roots):
    allowed, outside = roots
    (allowed / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(SourceFolderRefused, match="outside the folders"):
        source_create(knowledge_base=kb, name="Link", kind="folder", location=str(allowed / "link"))

    # A folder that was inside when saved and is swapped for a link later is caught by the sync.
    inside = allowed / "docs"
    inside.mkdir()
    source = source_create(knowledge_base=kb, name="Docs", kind="folder", location=str(inside))
    inside.rmdir()
    inside.symlink_to(outside, target_is_directory=True)
    sync = run_sync(source)
    assert sync.status == SyncStatus.FAILED
    assert "outside the folders this server allows" in sync.error
    assert not Article.objects.filter(knowledge_base=kb).exists()


@pytest.mark.django_db
def test_another_knowledge_bases_folder_is_refused(kb, roots):
    allowed, _ = roots
    other = KnowledgeBase.objects.create(slug="other", name="Other business")
    theirs = allowed / "other"
    theirs.mkdir()
    source_create(knowledge_base=other, name="Theirs", kind="folder", location=str(theirs))
    for location in (theirs, allowed):  # their folder, or one that contains it
        with pytest.raises(SourceFolderRefused, match="another knowledge base reads"):
            source_create(knowledge_base=kb, name=f"Mine {location.name}", kind="folder", location=str(location))
    mine = allowed / "mine"
    mine.mkdir()
    source = source_create(knowledge_base=kb, name="Mine", kind="folder", location=str(mine))
    with pytest.raises(SourceFolderRefused, match="another knowledge base reads"):
        source_update(source=source, name="Mine", location=str(theirs), schedule="off", gone_policy="confirm")
    assert len(refused(kb)) == 3


@pytest.mark.django_db
def test_no_roots_means_no_folder_sources(kb, settings, tmp_path):
    settings.SOURCE_FOLDER_ROOTS = []
    with pytest.raises(SourceInputError, match="folder sources are switched off"):
        source_create(knowledge_base=kb, name="Any", kind="folder", location=str(tmp_path))


@pytest.mark.django_db
def test_creating_and_changing_a_source_is_audited(kb, roots, admin_user):
    allowed, _ = roots
    source = source_create(knowledge_base=kb, name="Drive", kind="folder", location=str(allowed), actor=admin_user)
    source_update(source=source, name="Shared drive", location=str(allowed), schedule="daily", gone_policy="confirm",
                  actor=admin_user)
    created, changed = (AuditEvent.objects.get(knowledge_base=kb, action=action)
                        for action in (AuditAction.SOURCE_CREATED, AuditAction.SOURCE_CHANGED))
    assert created.actor == changed.actor == admin_user
    assert changed.detail["changed"] == {"name": ["Drive", "Shared drive"], "schedule": ["off", "daily"]}


@pytest.mark.django_db
def test_a_folder_of_seventy_files_with_five_bad_ones_syncs_sixty_five(kb, roots):
    allowed, _ = roots
    for number in range(65):
        faq_file(allowed, f"good-{number:02}.json", (f"faq-{number}", f"Question {number}?", f"Answer number {number}."))
    faq_file(allowed, "bad-nul.json", ("faq-nul", "Nul?", "A body with a \x00 in it."))
    faq_file(allowed, "bad-long-title.json", ("faq-long", "T" * 600, "Fine body."))
    # One good entry before a bad one: the file is written whole or not at all.
    faq_file(allowed, "bad-second-entry.json", ("faq-first-ok", "First?", "Fine."), ("faq-blank", "Blank?", "   "))
    (allowed / "bad-empty.csv").write_text("ref,question,answer\n")
    (allowed / "bad-garbage.pdf").write_bytes(b"%PDF-1.4 not really a pdf")
    source = source_create(knowledge_base=kb, name="Drive", kind="folder", location=str(allowed))
    sync = run_sync(source)
    assert sync.status == SyncStatus.DONE, sync.error
    assert sync.counts["created"] == 65
    errors = {error["key"]: error["error"] for error in sync.page_errors}
    assert sorted(errors) == ["bad-empty.csv", "bad-garbage.pdf", "bad-long-title.json", "bad-nul.json",
                              "bad-second-entry.json"]
    assert "NUL" in errors["bad-nul.json"]
    assert "title" in errors["bad-long-title.json"] and "fit" in errors["bad-long-title.json"]
    assert "nothing to import" in errors["bad-empty.csv"]
    assert all(message.startswith(key) for key, message in errors.items())  # each names its file
    refs = set(Article.objects.filter(knowledge_base=kb).values_list("external_ref", flat=True))
    assert len(refs) == 65 and "faq-first-ok" not in refs
    assert SourceSync.objects.filter(source=source).count() == 1
