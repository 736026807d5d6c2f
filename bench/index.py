"""Index throughput against the raw encoder (every embedding backend side by side), time for a fix to
reach retrieval, search latency and HNSW recall.

    .venv/bin/python bench/index.py            # full: 10,000-article KB, search at 100,000 chunks
    .venv/bin/python bench/index.py --quick    # ~4 minutes: 600 articles (three full indexes), search at 20,000 chunks

Runs on its own database (`kbreview_bench_index` on the embedded server, dropped at the end), or, with
DATABASE_URL set, in a throwaway knowledge base deleted at the end.

1. Full index: generated support articles are imported (articles_import, no index), then the whole
   knowledge base is indexed by index_resync: chunking, MiniLM embedding, chunk swap per article.
2. Fix: one article at a time is edited (article_edit) and re-indexed (article_reindex), then searched
   (search) for its new sentence until the new text comes back; afterwards the old text must be gone
   from the results and from the index. The ratio compares the median fix with the full index of step 1.
3. Search: the knowledge base is grown to the target number of chunks. The extra chunks carry generated
   text (full text indexed as the application does) but their vectors are *recombined real embeddings*:
   0.75·a + 0.25·b + noise, normalised, where a and b are MiniLM embeddings of real chunks of the same topic
   from step 1 (embedding 100k chunks would take minutes). Queries are generated customer questions and go
   through the real `search` selector; its embedding call is timed separately, so the rest is database time.
   HNSW and exact scan (search(exact_vectors=True)) alternate per query. Recall@10 compares
   vector_search_ids(exact=False) with vector_search_ids(exact=True) on the same query vectors.
"""
from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402

log = common.log


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes; finishes in about two minutes")
    parser.add_argument("--articles", type=int, help="articles in the indexed KB (default 10000, quick 600)")
    parser.add_argument("--chunks", type=int, help="chunks for the search measurement (default 100000, quick 20000)")
    parser.add_argument("--fixes", type=int, help="fix trials (default 30, quick 10)")
    parser.add_argument("--queries", type=int, help="search queries (default 200, quick 50)")
    parser.add_argument("--repeats", type=int, help="full indexes of new articles, each in a knowledge base of its own "
                        "and timed beside the raw encoder on its own texts; index_vs_encoder_ratio is their median "
                        "(default 1, quick 3: this machine's run-to-run noise is as large as the gap to the target)")
    return parser.parse_args()


# --- 1. full index -----------------------------------------------------------------------------


def measure_full_index(kb, articles) -> dict:
    import articles.indexing as indexing
    import articles.services as services

    log(f"[index] importing {len(articles)} generated articles (no index yet) ...")
    watch = common.Stopwatch()
    report = services.articles_import(knowledge_base=kb, parsed=common.to_parsed(articles), reindex=False)
    import_s = watch()
    log(f"[index] imported {len(report.created)} articles in {import_s:.1f} s")
    embed_times: list[float] = []
    progress = {"next": 0.0}
    watch = common.Stopwatch()

    def on_progress(done: int, total: int) -> None:
        if watch() >= progress["next"]:
            log(f"[index]   {done}/{total} articles, {watch():.0f} s")
            progress["next"] += 30

    # Every text the index embeds (chunks and the statements the claim detector reads, in the same batches)
    # is counted, and a sample of them is kept: the raw encoder is timed on those very texts.
    embedded: list[str] = []
    original = indexing.embed_texts

    def recording(texts, *args, **kwargs):
        embedded.extend(texts)
        return original(texts, *args, **kwargs)

    indexing.embed_texts = recording
    cpu_started = time.process_time()
    try:
        with common.timed_calls(indexing, "embed_texts", embed_times):
            written = indexing.index_resync(knowledge_base=kb, on_progress=on_progress)
    finally:
        indexing.embed_texts = original
    elapsed = watch()
    cpu = time.process_time() - cpu_started  # this process's threads (encoder included), not PostgreSQL's
    embed_s = sum(embed_times)
    texts = len(embedded)
    from django.db.models import Sum

    from articles.models import VersionClaimVectors

    statements = VersionClaimVectors.objects.filter(version__article__knowledge_base=kb).aggregate(n=Sum("count"))["n"] or 0
    log(
        f"[index] indexed {written} chunks of {len(articles)} articles ({texts} texts embedded: chunks and "
        f"statements, each text once) in {elapsed:.1f} s = {texts / elapsed:.0f} texts/s; the encoder's thread "
        f"busy {embed_s:.1f} s ({texts / embed_s:.0f} texts/s); vectors stored: {written} chunks + {statements} "
        f"statements = {(written + statements) / elapsed:.0f}/s (a text stated by several articles is embedded once)"
    )
    # The raw encoder is timed on these very texts, or on every k-th of them past 3,000: a run of the first texts
    # (one batch's short statements) is not like the rest and timed ~20% faster (bench history, 2026-12-04).
    sample = embedded if texts <= 3000 else embedded[:: -(-texts // 2000)]
    return {"chunks": written, "texts": texts, "sample": sample,
            "seconds": elapsed, "cpu_seconds": cpu, "embed_seconds": embed_s, "import_seconds": import_s}


def measure_repeat(n_articles: int, *, seed: int, backend: str, kbs: list) -> tuple[dict, float]:
    """One more full index, of new articles in a knowledge base of its own (added to `kbs`), with the vectors this
    process kept from earlier runs forgotten, and the raw encoder's rate on the texts it embedded, right after."""
    from articles.claim_texts import claim_text_vectors

    kb = common.new_knowledge_base(f"index-repeat{seed}")
    kbs.append(kb)
    claim_text_vectors.clear()
    run = measure_full_index(kb, common.generate_articles(n_articles, seed=seed))
    _, timing = timed_encoder(run["sample"], backend=backend)
    log(f"[repeat] {backend} alone on the same {len(run['sample'])} texts: {timing['rate']:.1f} texts/s; "
        f"index_vs_encoder_ratio {run['texts'] / run['seconds'] / timing['rate']:.3f}")
    return run, timing["rate"]


# --- 1b. raw encoder rates, every backend on the same texts --------------------------------------


def timed_encoder(texts: list[str], *, backend: str):
    """One backend's vectors of `texts` and its rate (texts/s) and CPU per text, loaded (and on first use
    exported) outside the timing."""
    from articles.embeddings import embed_texts

    embed_texts(texts[:16], backend=backend)
    watch = common.Stopwatch()
    cpu_started = time.process_time()
    vectors = embed_texts(texts, backend=backend)
    seconds = watch()
    cpu = time.process_time() - cpu_started
    return vectors, {"rate": len(texts) / seconds, "cpu_per_text": cpu / len(texts)}


def measure_encoders(texts: list[str]) -> dict:
    """Raw encode rate (embed_texts alone, no database) of each backend on texts the index embedded (chunks
    and statements, as sampled by measure_full_index), PyTorch first, and each one's agreement with
    PyTorch's vectors (cosine, row by row)."""
    import numpy as np
    from django.conf import settings


    results: dict[str, dict] = {}
    reference = None
    for backend in settings.EMBEDDING_BACKENDS:
        vectors, timing = timed_encoder(texts, backend=backend)
        if reference is None:
            reference = vectors
        cosine = (vectors * reference).sum(axis=1)
        results[backend] = {**timing, "cos_min": float(np.min(cosine)), "cos_mean": float(np.mean(cosine))}
        log(f"[encoder] {backend:<9} {timing['rate']:7.1f} texts/s on {len(texts)} index texts; cosine with "
            f"PyTorch's vectors min {results[backend]['cos_min']:.4f} mean {results[backend]['cos_mean']:.4f}")
    agreeing = {name: r for name, r in results.items() if r["cos_min"] >= 0.99}
    fastest = max(agreeing, key=lambda name: agreeing[name]["rate"])
    chosen = settings.EMBEDDING_BACKEND
    log(f"[encoder] fastest with cosine >= 0.99: {fastest}; configured (EMBEDDING_BACKEND): {chosen}"
        + ("" if fastest == chosen else "  <- differs on this run"))
    return {"results": results, "chosen": chosen, "fastest": fastest}


# --- 2. fix reaches retrieval --------------------------------------------------------------------


def measure_fixes(kb, articles, trials: int, rng: random.Random) -> dict:
    import articles.selectors as selectors
    from articles.indexing import article_reindex
    from articles.models import Article, Chunk
    from articles.services import article_edit

    by_ref = {a.ref: a for a in articles}
    targets = rng.sample(sorted(by_ref), trials)
    totals, edits, reindexes, searches, polls, violations = [], [], [], [], [], 0
    log(f"[fix] {trials} edits, each: article_edit -> article_reindex -> search until the new text is returned")
    for n, ref in enumerate(targets):
        generated = by_ref[ref]
        article = Article.objects.select_related("current_version").get(knowledge_base=kb, external_ref=ref)
        old_body = article.current_version.body
        old_paragraph = old_body.split("\n\n")[0]
        token = f"zq{n}x{rng.randint(10_000, 99_999)}"
        new_sentence = (
            f"Update {token}: from 1 March 2026 the {generated.topic} terms in this article changed; "
            f"the new fee is £{rng.randint(10, 99)}.{rng.choice(['00', '50', '99'])}."
        )
        new_body = old_body.replace(old_paragraph, new_sentence, 1)
        started = time.perf_counter()
        article_edit(article=article, expected_version_id=article.current_version_id, body=new_body)
        t_edit = time.perf_counter()
        article_reindex(article_id=article.pk)
        t_reindex = time.perf_counter()
        attempts, visible_at = 0, None
        while attempts < 50:
            attempts += 1
            hits = selectors.search(knowledge_base=kb, question=new_sentence)
            mine = [h for h in hits if h.article_id == article.pk]
            texts = [t for h in mine for t in h.chunks]
            if any(token in t for t in texts) and not any(old_paragraph in t for t in texts):
                visible_at = time.perf_counter()
                break
            time.sleep(0.01)
        if visible_at is None:
            raise SystemExit(f"fix {ref} never became visible in search")
        totals.append(visible_at - started)
        edits.append(t_edit - started)
        reindexes.append(t_reindex - t_edit)
        searches.append(visible_at - t_reindex)
        polls.append(attempts)
        # "never the old": the old paragraph must be gone from later searches (by the old text too) and from the index.
        for question in (new_sentence, old_paragraph[:200]):
            for hit in selectors.search(knowledge_base=kb, question=question):
                if hit.article_id == article.pk and any(old_paragraph in t for t in hit.chunks):
                    violations += 1
        if Chunk.objects.filter(article_id=article.pk, text__contains=old_paragraph).exists():
            violations += 1
    log(f"[fix] edit to visible:  {common.summary(totals, 1000, ' ms')}")
    log(f"[fix]   article_edit:    {common.summary(edits, 1000, ' ms')}")
    log(f"[fix]   article_reindex: {common.summary(reindexes, 1000, ' ms')}")
    log(f"[fix]   search:          {common.summary(searches, 1000, ' ms')}")
    log(f"[fix] searches needed until visible: max {max(polls)} (1 = visible at the first search); "
        f"old text seen after the fix: {violations} times")
    return {"totals": totals, "violations": violations}


# --- 3. grow to the target chunk count with recombined real embeddings ---------------------------------


def grow_to(kb, *, target_chunks: int, first_index: int, rng: random.Random) -> dict:
    import numpy as np
    import psycopg
    from django.db import connection
    from pgvector.psycopg import register_vector

    from articles.chunking import chunk_body
    from articles.models import Article, ArticleVersion, Chunk

    have = Chunk.objects.filter(knowledge_base=kb).count()
    missing = target_chunks - have
    if missing <= 0:
        return {"synthetic_chunks": 0, "seconds": 0.0}
    # Real embeddings by topic (the ref starts with the topic), the material for the recombined vectors.
    pool: dict[str, list] = defaultdict(list)
    for ref, vector in Chunk.objects.filter(knowledge_base=kb).values_list("article__external_ref", "embedding"):
        pool[ref.split("-")[0]].append(np.asarray(vector, dtype=np.float32))
    pools = {topic: np.stack(vectors) for topic, vectors in pool.items()}
    noise_rng = np.random.default_rng(rng.randint(0, 2**31))

    log(f"[grow] adding ~{missing} chunks (generated text, recombined real vectors) to reach {target_chunks} ...")
    watch = common.Stopwatch()
    generated, planned = [], 0
    batch_start = first_index
    while planned < missing:
        batch = common.generate_articles(2000, seed=99, start=batch_start)
        batch_start += 2000
        for article in batch:
            pieces = chunk_body(article.body)
            generated.append((article, pieces))
            planned += len(pieces)
            if planned >= missing:
                break
    created = Article.objects.bulk_create(
        [Article(knowledge_base=kb, external_ref=a.ref, title=a.title, source_type=a.source,
                 source_uri=f"bench://{a.ref}") for a, _ in generated],
        batch_size=5000,
    )
    versions = ArticleVersion.objects.bulk_create(
        [ArticleVersion(article=row, number=1, title=a.title, body=a.body, content_hash=f"bench-{a.ref}",
                        updated_at=a.updated_at, reason="import") for row, (a, _) in zip(created, generated)],
        batch_size=5000,
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE articles_article AS a SET current_version_id = v.id, indexed_version_id = v.id "
            "FROM articles_articleversion AS v WHERE v.article_id = a.id AND a.knowledge_base_id = %s "
            "AND a.current_version_id IS NULL",
            [kb.pk],
        )
    params = connection.get_connection_params()
    params = {k: v for k, v in params.items() if k in ("dbname", "user", "host", "port", "password")}
    with psycopg.connect(**params, autocommit=True) as raw:
        register_vector(raw)
        raw.execute(
            "CREATE TEMP TABLE bench_chunk_stage (article_id bigint, version_id bigint, ordinal integer, "
            "text text, embedding vector(384), title text)"
        )
        with raw.cursor() as cursor:
            with cursor.copy(
                "COPY bench_chunk_stage (article_id, version_id, ordinal, text, embedding, title) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["int8", "int8", "int4", "text", "vector", "text"])
                for row, version, (article, pieces) in zip(created, versions, generated):
                    same_topic = pools[article.topic] if article.topic in pools else next(iter(pools.values()))
                    for ordinal, text in enumerate(pieces):
                        a, b = same_topic[noise_rng.integers(len(same_topic), size=2)]
                        vector = 0.75 * a + 0.25 * b + noise_rng.normal(0.0, 0.02, size=a.shape[0]).astype(np.float32)
                        vector /= np.linalg.norm(vector)
                        copy.write_row((row.pk, version.pk, ordinal, text, vector, article.title))
        log(f"[grow]   staged {planned} chunks in {watch():.0f} s; inserting into the indexed table (HNSW + GIN) ...")
        # The tsvector is a generated column: PostgreSQL computes it as for the application's own inserts.
        raw.execute(
            "INSERT INTO articles_chunk (knowledge_base_id, article_id, version_id, ordinal, title, text, embedding) "
            "SELECT %s, article_id, version_id, ordinal, coalesce(title, ''), text, embedding FROM bench_chunk_stage",
            [kb.pk],
        )
        raw.execute("ANALYZE articles_chunk")
        raw.execute("ANALYZE articles_article")
    total = Chunk.objects.filter(knowledge_base=kb).count()
    log(f"[grow] {total} chunks in the knowledge base ({planned} synthetic) after {watch():.0f} s")
    return {"synthetic_chunks": planned, "total_chunks": total, "seconds": watch()}


# --- 4. search latency and recall ---------------------------------------------------------------


def plan_uses(kb, vector, exact: bool) -> str:
    """Which scan the vector ranker's query gets (the same SET LOCALs as the selector)."""
    from django.conf import settings
    from django.db import connection, transaction
    from pgvector.django import CosineDistance

    from articles.models import Chunk

    query = (
        Chunk.objects.filter(knowledge_base=kb).annotate(distance=CosineDistance("embedding", vector))
        .order_by("distance").values_list("pk", "distance")[:40]
    )
    with transaction.atomic(), connection.cursor() as cursor:
        if exact:
            cursor.execute("SET LOCAL enable_indexscan = off")
        else:
            cursor.execute("SET LOCAL hnsw.ef_search = %s", [max(settings.HNSW_EF_SEARCH, 40)])
            cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        plan = query.explain()
    nodes = re.findall(r"(Index Scan using \w+|Seq Scan on \w+|Bitmap Heap Scan on \w+|Parallel Seq Scan on \w+)", plan)
    return ", ".join(dict.fromkeys(nodes)) or plan.splitlines()[0]


def count_chunks(kb) -> int:
    from articles.models import Chunk

    return Chunk.objects.filter(knowledge_base=kb).count()


def default_ef() -> int:
    from django.conf import settings

    return settings.HNSW_EF_SEARCH


def measure_recall(kb, vectors, *, label: str) -> float:
    """Mean recall@10 of vector_search_ids(exact=False) against exact=True on the same query vectors."""
    from pgvector.django import CosineDistance

    import articles.selectors as selectors
    from articles.models import Chunk

    def distances(ids, vector) -> list[float]:
        rows = dict(Chunk.objects.filter(pk__in=ids).annotate(d=CosineDistance("embedding", vector)).values_list("pk", "d"))
        return sorted(rows[i] for i in ids)

    recalls, tie_recalls, worst = [], [], None
    for vector in vectors:
        approximate = selectors.vector_search_ids(knowledge_base=kb, question_vector=vector, limit=10, exact=False)
        exact = selectors.vector_search_ids(knowledge_base=kb, question_vector=vector, limit=10, exact=True)
        recall = len(set(approximate) & set(exact)) / max(1, len(exact))
        recalls.append(recall)
        # A result at the same distance as the exact 10th (a duplicate text) is as good as the one it displaced.
        exact_d, approx_d = distances(exact, vector), distances(approximate, vector)
        tie_recalls.append(sum(d <= exact_d[-1] + 1e-6 for d in approx_d) / max(1, len(exact)))
        if worst is None or recall < worst[0]:
            worst = (recall, exact_d, approx_d)
    recall = sum(recalls) / len(recalls)
    log(f"[recall] {label}: recall@10 HNSW vs exact over {len(recalls)} queries: mean {recall:.4f}, "
        f"worst {min(recalls):.2f}, queries below 1.0: {sum(r < 1 for r in recalls)}; "
        f"counting equal-distance results as hits: {sum(tie_recalls) / len(tie_recalls):.4f}")
    if worst and worst[0] < 0.8:
        log(f"[recall]   worst query: HNSW distances {[round(d, 3) for d in worst[2]]} "
            f"vs exact {[round(d, 3) for d in worst[1]]}")
    return recall


def write_amplification(kb) -> str:
    """How many heap tuples the chunk table got per chunk written (the index swap inserts, then updates)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
    with connection.cursor() as cursor:  # a new statement: the flush happened at the end of the last one
        cursor.execute(
            "SELECT n_tup_ins, n_tup_upd, n_tup_hot_upd, n_dead_tup, pg_relation_size('chunk_embedding_hnsw'), "
            "pg_relation_size('chunk_search_vector_gin') FROM pg_stat_user_tables WHERE relname = 'articles_chunk'"
        )
        ins, upd, hot, dead, hnsw, gin = cursor.fetchone()
    return (f"chunk table: {ins} inserted, {upd} updated ({hot} HOT), {dead} dead tuples; "
            f"HNSW index {hnsw / 2**20:.1f} MiB, GIN {gin / 2**20:.1f} MiB")


def measure_search(kb, questions: list[str], *, ef_sweep: bool) -> dict:
    import articles.selectors as selectors
    from articles.embeddings import embed_texts

    for question in questions[:5]:  # warm the model, the caches and the connection
        selectors.search(knowledge_base=kb, question=question)
        selectors.search(knowledge_base=kb, question=question, exact_vectors=True)
    results: dict[str, dict[str, list[float]]] = {
        "hnsw": {"total": [], "embed": [], "db": []}, "exact": {"total": [], "embed": [], "db": []},
    }
    for i, question in enumerate(questions):
        order = ("hnsw", "exact") if i % 2 == 0 else ("exact", "hnsw")
        for mode in order:
            embed_times: list[float] = []
            with common.timed_calls(selectors, "embed_text", embed_times):
                started = time.perf_counter()
                selectors.search(knowledge_base=kb, question=question, exact_vectors=(mode == "exact"))
                total = time.perf_counter() - started
            results[mode]["total"].append(total)
            results[mode]["embed"].append(sum(embed_times))
            results[mode]["db"].append(total - sum(embed_times))
    for mode in ("hnsw", "exact"):
        for part in ("total", "embed", "db"):
            log(f"[search] {mode:5} {part:5}: {common.summary(results[mode][part], 1000, ' ms')}")

    vectors = embed_texts(questions)
    log(f"[search] vector ranker plan, HNSW path:  {plan_uses(kb, vectors[0], exact=False)}")
    log(f"[search] vector ranker plan, exact path: {plan_uses(kb, vectors[0], exact=True)}")
    recall = measure_recall(kb, vectors, label=f"at {count_chunks(kb)} chunks, HNSW_EF_SEARCH={default_ef()}")
    configured = default_ef()
    for ef in (200, 400) if ef_sweep else ():
        from django.test import override_settings

        with override_settings(HNSW_EF_SEARCH=ef):
            measure_recall(kb, vectors, label=f"with HNSW_EF_SEARCH={ef} instead of {configured}")
    return {"results": results, "recall": recall}


def main() -> None:
    args = parse_args()
    n_articles = args.articles or (600 if args.quick else 10_000)
    n_chunks = args.chunks or (20_000 if args.quick else 100_000)
    n_fixes = args.fixes or (10 if args.quick else 30)
    n_queries = args.queries or (50 if args.quick else 200)
    n_repeats = args.repeats or (3 if args.quick else 1)
    extra_kbs: list = []
    rng = random.Random(20260301)
    wall = common.Stopwatch()
    log(f"bench/index.py {'--quick' if args.quick else '(full)'}: {n_articles} articles, search at {n_chunks} chunks, "
        f"{n_fixes} fixes, {n_queries} queries; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    common.setup_django(database="index")
    from articles.embeddings import embed_text

    embed_text("warm up the model")  # model load is start-up, not indexing
    from conflicts.services.detection.detector import claim_detector_warm_up

    claim_detector_warm_up()  # the claim parsers too, as a worker does at start (conflicts.apps)
    kb = common.new_knowledge_base("index")
    try:
        articles = common.generate_articles(n_articles)
        index = measure_full_index(kb, articles)
        log(f"[index] {write_amplification(kb)}")
        encoders = measure_encoders(index["sample"])
        repeats = [(index, encoders["results"][encoders["chosen"]]["rate"])]
        for repeat in range(1, n_repeats):
            repeats.append(measure_repeat(n_articles, seed=7 + repeat, backend=encoders["chosen"], kbs=extra_kbs))
        # The same arm twice: the chosen encoder again on the first run's texts, minutes after its first timing.
        noise_floor = None
        if n_repeats > 1:
            _, again = timed_encoder(index["sample"], backend=encoders["chosen"])
            first = encoders["results"][encoders["chosen"]]["rate"]
            noise_floor = max(first, again["rate"]) / min(first, again["rate"])
        from articles.embeddings import embed_texts

        questions = common.generate_questions(n_queries, seed=5)
        measure_recall(kb, embed_texts(questions), label=f"real embeddings only, at {count_chunks(kb)} chunks")
        fixes = measure_fixes(kb, articles, n_fixes, rng)
        grown = grow_to(kb, target_chunks=n_chunks, first_index=n_articles, rng=rng)
        search = measure_search(kb, questions, ef_sweep=not args.quick)
    finally:
        common.teardown([kb, *extra_kbs])

    fix_p50 = common.percentile(fixes["totals"], 50)
    full_s = index["seconds"]
    hnsw, exact = search["results"]["hnsw"], search["results"]["exact"]
    hnsw_p95 = common.percentile(hnsw["total"], 95)
    exact_p95 = common.percentile(exact["total"], 95)
    log("")
    log(f"full index of {index['chunks']} chunks ({n_articles} articles): {full_s:.1f} s; "
        f"median one-article fix (edit -> visible in search): {fix_p50 * 1000:.0f} ms; "
        f"fix_vs_full_reindex_ratio = median fix / full index")
    log(f"search at {grown.get('total_chunks', index['chunks'])} chunks "
        f"({grown['synthetic_chunks']} with recombined real embeddings, see the docstring): "
        f"HNSW p50/p95 {common.percentile(hnsw['total'], 50) * 1000:.1f}/{hnsw_p95 * 1000:.1f} ms "
        f"(query embedding p95 {common.percentile(hnsw['embed'], 95) * 1000:.1f} ms, "
        f"database p95 {common.percentile(hnsw['db'], 95) * 1000:.1f} ms); "
        f"exact p50/p95 {common.percentile(exact['total'], 50) * 1000:.1f}/{exact_p95 * 1000:.1f} ms "
        f"(database p95 {common.percentile(exact['db'], 95) * 1000:.1f} ms); "
        f"database-only p95 ratio HNSW/exact {common.percentile(hnsw['db'], 95) / common.percentile(exact['db'], 95):.3f}")
    if args.quick:
        log(f"--quick: {n_articles} articles and {n_chunks} chunks instead of 10,000 and 100,000")
    log(f"wall time {wall():.0f} s; load average now {os.getloadavg()[0]:.2f}")
    chosen = encoders["results"][encoders["chosen"]]
    torch_rate = encoders["results"]["torch"]["rate"]
    log(f"index_vs_encoder_ratio = index rate / raw {encoders['chosen']} encode rate in this run; "
        f"the encoder figures compare {encoders['chosen']} with PyTorch on the same index texts (chunks and statements)")
    # The same comparison in CPU seconds (this process's, all threads): what the encoder alone would spend on the
    # texts the index embedded, against what the index spent. Other sessions' load moves it much less than wall time.
    cpu_ratio = chosen["cpu_per_text"] * index["texts"] / index["cpu_seconds"]
    log(f"index_vs_encoder_cpu_ratio = {cpu_ratio:.3f}: raw encoder {chosen['cpu_per_text'] * 1000:.1f} ms CPU per text "
        f"x {index['texts']} texts / the index's {index['cpu_seconds']:.1f} s CPU (PostgreSQL's own CPU not included)")
    ratios = sorted(run["texts"] / run["seconds"] / rate for run, rate in repeats)
    log(f"index_vs_encoder_ratio over {len(repeats)} full index(es), each beside the raw encoder on its own texts: "
        + ", ".join(f"{run['texts'] / run['seconds'] / rate:.3f}" for run, rate in repeats)
        + f"; median {statistics.median(ratios):.3f}"
        + (f"; noise floor: the raw encoder on the first run's texts timed twice, faster/slower rate {noise_floor:.3f}"
           if noise_floor is not None else ""))
    common.print_figures([
        common.Figure("index_chunks_per_s", index["chunks"] / full_s, "chunks/s", ">=", 300, digits=1),
        common.Figure("encoder_chunks_per_s", chosen["rate"], "chunks/s", ">=", round(torch_rate, 1), digits=1),
        common.Figure("encoder_torch_chunks_per_s", torch_rate, "chunks/s", "<=", round(chosen["rate"], 1), digits=1),
        common.Figure("encoder_cosine_min_vs_torch", chosen["cos_min"], "cosine", ">=", 0.99, digits=4),
        common.Figure("index_vs_encoder_ratio", statistics.median(ratios), "x", ">=", 0.85),
        common.Figure("fix_visible_p95_s", common.percentile(fixes["totals"], 95), "s", "<", 1),
        common.Figure("fix_vs_full_reindex_ratio", fix_p50 / full_s, "x", "<", 0.01, digits=6),
        common.Figure("search_p95_ms", hnsw_p95 * 1000, "ms", "<", 50, digits=1),
        common.Figure("search_p95_vs_exact_ratio", hnsw_p95 / exact_p95, "x", "<", 1),
        common.Figure("hnsw_recall_at_10", search["recall"], "fraction", ">=", 0.95),
    ])


if __name__ == "__main__":
    main()
