"""Sources: every write staff (or the schedule) ask for about where articles live. Each state change writes
its audit row.

A source's settings are checked here (a folder source only under the allowed roots, never a folder another
knowledge base reads), uploaded files stored, syncs requested by hand or by schedule, and pages a sync
found gone confirmed. The sync itself runs in a worker (articles/sources_sync.py), and what it does to
each document's articles is in articles/sources_apply.py; a change held because staff edited the article
is reviewed through articles/sources_drift.py.
"""
from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, transaction
from django.utils import timezone

from articles.audit import audit_event_record
from articles.ingest import SUPPORTED_SUFFIXES
from articles.models import (
    ACTIVE_SYNC_STATUSES,
    AuditAction,
    GonePolicy,
    KnowledgeBase,
    PageState,
    Source,
    SourceFile,
    SourceKind,
    SourcePage,
    SourceSchedule,
    SourceSync,
    SyncTrigger,
)
from articles.sources_apply import page_gone
from kbreview.jobs import enqueue

SCHEDULE_INTERVALS = {SourceSchedule.HOURLY: dt.timedelta(hours=1), SourceSchedule.DAILY: dt.timedelta(days=1)}


class SourceInputError(ValueError):
    """A source that cannot be saved as given; the message names the field."""


# --- a source's settings --------------------------------------------------------------------------


_url_validator = URLValidator(schemes=["http", "https"])


def _check_urls(lines: list[str], *, field_name: str) -> None:
    for number, line in enumerate(lines, start=1):
        try:
            _url_validator(line)
        except ValidationError:
            raise SourceInputError(f"{field_name} line {number}: {line!r} is not an http(s) address") from None


def _clean_location(*, kind: str, location: str) -> str:
    lines = [line.strip() for line in location.replace("\r\n", "\n").split("\n") if line.strip()]
    if kind == SourceKind.URLS:
        if not lines:
            raise SourceInputError("location: list at least one page URL, one per line")
        if len(lines) > settings.SOURCE_MAX_PAGES:
            raise SourceInputError(f"location: {len(lines)} URLs; the limit is {settings.SOURCE_MAX_PAGES}")
        _check_urls(lines, field_name="location")
        return "\n".join(dict.fromkeys(lines))  # duplicates dropped, order kept
    if kind == SourceKind.SITEMAP:
        if len(lines) != 1:
            raise SourceInputError("location: give the sitemap's URL (one line)")
        _check_urls(lines, field_name="location")
        return lines[0]
    if kind == SourceKind.FOLDER:
        if len(lines) != 1:
            raise SourceInputError("location: give one folder path on the server")
        folder = Path(lines[0])
        if not folder.is_absolute():
            raise SourceInputError(f"location: {lines[0]!r} is not an absolute path")
        return str(folder)
    if lines:
        raise SourceInputError("location: uploaded-file sources have no location; upload files instead")
    return ""


class SourceFolderRefused(SourceInputError):
    """A folder outside every allowed root, or one another knowledge base reads: refused and audited."""


def _overlaps(one: Path, other: Path) -> bool:
    return one == other or one.is_relative_to(other) or other.is_relative_to(one)


def source_folder_checked(*, knowledge_base: KnowledgeBase, location: str, exclude_id: int | None = None) -> Path:
    """The folder a folder source may read, resolved (symlinks and '..' followed), or SourceFolderRefused
    naming why. Allowed: an existing folder inside one of SOURCE_FOLDER_ROOTS that no folder source of
    another knowledge base reads, contains or sits inside. Checked when a source is saved and again at
    every sync, so a symlink swapped in later is caught too."""
    roots = [Path(root).resolve() for root in settings.SOURCE_FOLDER_ROOTS]
    if not roots:
        raise SourceFolderRefused(
            "location: folder sources are switched off on this server (no SOURCE_FOLDER_ROOTS configured); "
            "upload the files instead"
        )
    folder = Path(location).resolve()
    if not any(folder.is_relative_to(root) for root in roots):
        allowed = ", ".join(str(root) for root in roots)
        raise SourceFolderRefused(f"location: {location!r} is outside the folders this server allows ({allowed})")
    if not folder.is_dir():
        raise SourceFolderRefused(f"location: no folder at {location!r} on the server")
    others = (
        Source.objects.filter(kind=SourceKind.FOLDER).exclude(knowledge_base=knowledge_base).exclude(pk=exclude_id)
        .values_list("location", flat=True)
    )
    for other in others:
        if _overlaps(folder, Path(other).resolve()):
            raise SourceFolderRefused(f"location: {location!r} is (or overlaps) a folder another knowledge base reads")
    return folder


def _source_fields(
    *, knowledge_base: KnowledgeBase, name: str, kind: str, location: str, schedule: str, gone_policy: str,
    exclude_id: int | None = None, actor=None,
) -> dict:
    """Checked and normalised fields of a source; a SourceInputError names the field that is wrong."""
    name = " ".join(name.split())
    if not name:
        raise SourceInputError("name: a source needs a name")
    if kind not in SourceKind.values:
        raise SourceInputError(f"kind: {kind!r} is not one of {', '.join(SourceKind.values)}")
    if schedule not in SourceSchedule.values:
        raise SourceInputError(f"schedule: {schedule!r} is not one of {', '.join(SourceSchedule.values)}")
    if gone_policy not in GonePolicy.values:
        raise SourceInputError(f"gone_policy: {gone_policy!r} is not one of {', '.join(GonePolicy.values)}")
    if kind == SourceKind.UPLOAD and schedule != SourceSchedule.OFF:
        raise SourceInputError("schedule: uploaded files change only when uploaded; leave the schedule off")
    location = _clean_location(kind=kind, location=location)
    if kind == SourceKind.FOLDER:
        try:
            source_folder_checked(knowledge_base=knowledge_base, location=location, exclude_id=exclude_id)
        except SourceFolderRefused as exc:
            # Recorded before refusing: a refused attempt at another folder is worth knowing about (the views
            # call this outside a transaction, so the row stays).
            audit_event_record(action=AuditAction.SOURCE_REFUSED, target=knowledge_base,
                               knowledge_base=knowledge_base, actor=actor, location=location[:500], reason=str(exc))
            raise
    if Source.objects.filter(knowledge_base=knowledge_base, name=name).exclude(pk=exclude_id).exists():
        raise SourceInputError(f"name: this knowledge base already has a source called {name!r}")
    return {"name": name, "kind": kind, "location": location, "schedule": schedule, "gone_policy": gone_policy}


def source_create(
    *,
    knowledge_base: KnowledgeBase,
    name: str,
    kind: str,
    location: str = "",
    schedule: str = SourceSchedule.OFF,
    gone_policy: str = GonePolicy.CONFIRM,
    actor=None,
) -> Source:
    fields = _source_fields(knowledge_base=knowledge_base, name=name, kind=kind, location=location, schedule=schedule,
                            gone_policy=gone_policy, actor=actor)
    with transaction.atomic():
        source = Source.objects.create(knowledge_base=knowledge_base, created_by=actor, **fields)
        audit_event_record(action=AuditAction.SOURCE_CREATED, target=source, knowledge_base=knowledge_base,
                           actor=actor, **fields)
    return source


def source_update(
    *, source: Source, name: str, location: str, schedule: str, gone_policy: str, actor=None
) -> Source:
    """Change a source's settings (not its kind). Pages it no longer lists are handled by the next sync."""
    fields = _source_fields(knowledge_base=source.knowledge_base, name=name, kind=source.kind, location=location,
                            schedule=schedule, gone_policy=gone_policy, exclude_id=source.pk, actor=actor)
    before = {name: getattr(source, name) for name in fields}
    with transaction.atomic():
        Source.objects.filter(pk=source.pk).update(**fields)
        changed = {name: [before[name], value] for name, value in fields.items() if before[name] != value}
        if changed:
            audit_event_record(action=AuditAction.SOURCE_CHANGED, target=source, knowledge_base=source.knowledge_base,
                               actor=actor, changed=changed)
    source.refresh_from_db()
    return source


# --- uploaded files ------------------------------------------------------------------------------


def source_files_upload(*, source: Source, files: list[tuple[str, bytes]], actor=None) -> list[SourceFile]:
    """Store uploaded files (all or none); a file with the name of an earlier one replaces it."""
    if source.kind != SourceKind.UPLOAD:
        raise SourceInputError(f"files: {source.name} is not an uploaded-files source")
    if not files:
        raise SourceInputError("files: choose at least one file")
    cleaned: list[tuple[str, bytes]] = []
    for raw_name, content in files:
        name = Path(raw_name.replace("\\", "/")).name.strip()
        if not name or name.startswith("."):
            raise SourceInputError(f"files: {raw_name!r} is not a usable file name")
        if Path(name).suffix.lower() not in SUPPORTED_SUFFIXES:
            raise SourceInputError(
                f"files: {name}: unsupported file type (supported: {', '.join(SUPPORTED_SUFFIXES)})"
            )
        if len(content) > settings.SOURCE_UPLOAD_MAX_BYTES:
            raise SourceInputError(
                f"files: {name} is {len(content):,} bytes; the limit is {settings.SOURCE_UPLOAD_MAX_BYTES:,}"
            )
        if not content:
            raise SourceInputError(f"files: {name} is empty")
        cleaned.append((name, content))
    stored = []
    with transaction.atomic():
        for name, content in cleaned:
            stored_file, _ = SourceFile.objects.update_or_create(
                source=source,
                name=name,
                defaults={"content": content, "size": len(content), "sha256": hashlib.sha256(content).hexdigest(),
                          "uploaded_by": actor},
            )
            stored.append(stored_file)
    return stored


def source_file_remove(*, source: Source, file_id: int, actor=None) -> str:
    """Remove an uploaded file (audited); the next sync treats its articles as gone from the source (by the
    source's policy) and no longer reports the file's errors. Returns the file's name."""
    if source.kind != SourceKind.UPLOAD:
        raise SourceInputError(f"files: {source.name} is not an uploaded-files source")
    with transaction.atomic():
        stored = SourceFile.objects.select_for_update().filter(source=source, pk=file_id).only("pk", "name", "size", "sha256").first()
        if stored is None:
            raise SourceInputError("files: no such file in this source (already removed?)")
        name = stored.name
        audit_event_record(action=AuditAction.SOURCE_CHANGED, target=source, knowledge_base=source.knowledge_base,
                           actor=actor, removed_file={"name": name, "size": stored.size, "sha256": stored.sha256})
        stored.delete()
    return name


# --- syncs: asked for by hand or by schedule, confirmed gone pages -------------------------------


def source_sync_request(*, source: Source, trigger: str = SyncTrigger.MANUAL, actor=None) -> SourceSync:
    """Record a sync (the work row) and have a worker run it once the transaction commits; a sync already
    queued or running is returned instead. A broker outage leaves the row queued for the sweeper."""
    try:
        with transaction.atomic():
            active = SourceSync.objects.filter(source=source, status__in=ACTIVE_SYNC_STATUSES).first()
            if active is not None:
                return active
            return enqueue(SourceSync(knowledge_base_id=source.knowledge_base_id, source=source, trigger=trigger,
                                      requested_by=actor))
    except IntegrityError:  # another request created one between our check and insert
        return SourceSync.objects.get(source=source, status__in=ACTIVE_SYNC_STATUSES)


def sources_sync_due(*, now: dt.datetime | None = None) -> list[SourceSync]:
    """Start the scheduled syncs that are due. A sync a dead worker left behind is the one sweeper's
    (kbreview.jobs.jobs_sweep: re-sent under an expired lease, failed after its last attempt); a due source whose
    sync is still active gets that sync back, not a second one."""
    now = now or timezone.now()
    started = []
    for source in Source.objects.exclude(schedule=SourceSchedule.OFF).select_related("last_sync"):
        last = source.last_sync
        if last is not None and last.created_at > now - SCHEDULE_INTERVALS[source.schedule]:
            continue
        started.append(source_sync_request(source=source, trigger=SyncTrigger.SCHEDULE))
    return started


def source_page_gone_confirm(*, page: SourcePage, actor=None) -> SourcePage:
    """Ops confirm a page is gone from its source: its article leaves retrieval (restorable)."""
    with transaction.atomic():
        locked = SourcePage.objects.select_for_update(of=("self",)).select_related("source", "article").get(pk=page.pk)
        if locked.state != PageState.GONE_PENDING:
            raise SourceInputError(f"{locked.key} is not awaiting confirmation (it is {locked.get_state_display().lower()})")
        page_gone(page=locked, actor=actor, source_name=locked.source.name)
    locked.refresh_from_db()
    return locked
