"""Source sync: a first sync of a web source, then a re-sync after 1% of its pages changed.

    .venv/bin/python bench/source_sync.py            # 2,000 pages, 20 changed
    .venv/bin/python bench/source_sync.py --quick    # 300 pages, 3 changed

A real HTTP server on loopback (tests/support/page_server.py: ETag and Last-Modified, 304 on a match)
serves generated support articles as HTML pages. The source lists their URLs; the knowledge base allows
loopback fetching. Each sync is the real service (source_sync_run): robots.txt, conditional GETs,
trafilatura extraction, versioning, re-indexing with MiniLM. Then 1% of the pages get a new paragraph and
the source is synced again. The ratio is the second sync's time over the first's; the report checks that
the unchanged pages answered 304 and that exactly the changed pages became new article versions.
"""
from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402

log = common.log


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes; finishes in about a minute")
    parser.add_argument("--pages", type=int, help="pages in the source (default 2000, quick 300)")
    parser.add_argument("--changed-share", type=float, default=0.01, help="share of pages changed (default 0.01)")
    return parser.parse_args()


def run_sync(source):
    from articles.models import SourceSync
    from articles.sources_sync import source_sync_run

    # Recorded without enqueueing (the request service would run it at once without a broker): timed here.
    sync = SourceSync.objects.create(knowledge_base_id=source.knowledge_base_id, source=source)
    watch = common.Stopwatch()
    sync = source_sync_run(sync_id=sync.pk)
    return sync, watch()


def main() -> None:
    args = parse_args()
    pages = args.pages or (300 if args.quick else 2000)
    common.setup_django(database="source_sync")

    from articles.embeddings import get_encoder
    from articles.models import ArticleVersion
    from articles.sources import source_create
    from tests.support.page_server import PageServer, html_page

    get_encoder()  # loaded once, outside both timings
    kb = common.new_knowledge_base("sync")
    kb.allow_private_fetch = True
    kb.save()
    server = PageServer()
    generated = common.generate_articles(pages)
    paths = {}
    for article in generated:
        path = f"/kb/{article.ref}.html"
        paths[article.ref] = path
        server.set(path, html_page(article.title, article.body, ref=article.ref))
    source = source_create(
        knowledge_base=kb, name="Help centre", kind="urls", location="\n".join(server.url(p) for p in paths.values())
    )
    try:
        log(f"[sync] first sync of {pages} pages ...")
        first, first_s = run_sync(source)
        log(f"[sync] first: {first_s:.1f} s, {first.counts}")
        if first.status != "done" or first.counts.get("errors"):
            raise SystemExit(f"first sync failed: {first.error or first.page_errors[:3]}")

        changed = random.Random(5).sample(generated, max(1, round(pages * args.changed_share)))
        for article in changed:
            server.set(paths[article.ref], html_page(
                article.title, article.body + "\n\nUpdated: this policy was revised and now also covers refurbished items.",
                ref=article.ref,
            ))
        mark = len(server.requests)
        log(f"[sync] changed {len(changed)} pages; syncing again ...")
        second, second_s = run_sync(source)
        log(f"[sync] second: {second_s:.2f} s, {second.counts}")
        statuses = server.statuses(since=mark)
        reversioned = set(
            ArticleVersion.objects.filter(article__knowledge_base=kb, number=2).values_list("article__external_ref", flat=True)
        )
        expected = {a.ref for a in changed}
        log(f"[sync] second sync: {statuses.count(304)} answered 304, {statuses.count(200)} fetched (200), "
            f"{len(reversioned)} articles re-versioned, {second.counts.get('reindexed_chunks', 0)} chunks re-indexed")
        log(f"[sync] re-versioned = pages changed exactly: {reversioned == expected}")
        if reversioned != expected:
            raise SystemExit(f"re-versioned {sorted(reversioned ^ expected)[:5]} differ from the changed pages")
        log(f"[sync] first sync {first_s:.1f} s ({pages / first_s:.0f} pages/s), "
            f"second {second_s:.2f} s ({pages / second_s:.0f} pages/s)")
        common.print_figures([
            common.Figure("sync_not_modified_pages", statuses.count(304), "pages", ">=", pages - len(changed), digits=0),
            common.Figure("sync_reversioned_pages", len(reversioned), "pages", "<=", len(changed), digits=0),
            common.Figure("sync_changed_vs_full_ratio", second_s / first_s, "x", "<=", 0.05),
        ])
    finally:
        server.close()
        common.teardown([kb])


if __name__ == "__main__":
    main()
