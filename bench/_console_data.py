"""The data bench/console.py measures the console on (its docstring says what is generated): one knowledge
base grown in stages, written in SQL (COPY and INSERT ... SELECT generate_series), never row by row through
the ORM. Django must be set up (bench/_common.setup_django) before a Dataset is used."""
from __future__ import annotations

import datetime as dt
import hashlib
import random

import _common as common

SEED = 20260404
TYPES = ["price"] * 5 + ["hours"] * 4 + ["policy"] * 3 + ["contact"] * 2 + ["date"] * 2 + [
    "eligibility", "procedure", "quantity", "other"]


# --- writing rows in SQL -----------------------------------------------------------------------------


def table(model) -> str:
    from django.db import connection

    return connection.ops.quote_name(model._meta.db_table)


def insert_select(model, given: dict[str, str], tail: str, params: dict | None = None) -> int:
    """INSERT INTO model's table (given columns + every other column at its model default) SELECT ... tail.

    `given` maps a column to an SQL expression over the FROM clause in `tail`. Columns the benchmark does
    not know (added to the model later) get their Django default as a parameter, so the script keeps
    working when a model grows a field with a default; a NOT NULL column without one is an error here."""
    from django.db import connection

    params = dict(params or {})
    columns, expressions = [], []
    for column, expression in given.items():
        columns.append(column)
        expressions.append(expression)
    for field in model._meta.concrete_fields:
        if field.primary_key or field.column in given or getattr(field, "generated", False):
            continue
        value = field.get_default()
        if value is None:
            if field.null:
                continue
            raise RuntimeError(f"bench/console.py does not fill {model.__name__}.{field.name}: update insert_select's caller")
        key = f"default_{field.column}"
        params[key] = field.get_db_prep_save(value, connection)
        columns.append(field.column)
        expressions.append(f"%({key})s")
    quoted = ", ".join(connection.ops.quote_name(c) for c in columns)
    sql = f"INSERT INTO {table(model)} ({quoted}) SELECT {', '.join(expressions)} {tail}"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def execute(sql: str, params=None):
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall() if cursor.description else cursor.rowcount


def copy_rows(table: str, columns: list[str], rows) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)


SCRATCH_TABLES = ("bench_article", "bench_question", "bench_reply", "bench_new_conflict", "bench_conflict", "bench_occ")


def drop_scratch_tables() -> None:
    """The generator's working tables (unlogged tables, not temporary ones: the test Client closes the
    connection after every request, and the second load needs them)."""
    for table in SCRATCH_TABLES:
        execute(f"DROP TABLE IF EXISTS {table}")


class Dataset:
    """One knowledge base, grown in stages: articles once, then conflicts and occurrences up to a size."""

    def __init__(self, *, kb, reviewer, n_articles: int, now: dt.datetime) -> None:
        self.kb = kb
        self.reviewer = reviewer
        self.n_articles = n_articles
        self.now = now
        self.conflicts = 0
        self.occurrences = 0

    # articles ---------------------------------------------------------------------------------------

    def create_articles(self) -> None:
        from articles.models import Article, ArticleVersion

        rng = random.Random(SEED)
        generated = common.generate_articles(self.n_articles, seed=SEED)
        copy_rows(
            table(Article),
            ["knowledge_base_id", "external_ref", "title", "source_type", "source_uri", "status", "created_at", "modified_at"],
            ((self.kb.pk, a.ref, a.title, a.source, f"https://help.example.com/{a.ref}", "active", self.now, self.now)
             for a in generated),
        )
        ids = dict(Article.objects.filter(knowledge_base=self.kb).values_list("external_ref", "pk"))
        versions = []
        for a in generated:
            history = rng.choice([1, 1, 1, 2, 2, 3])
            for number in range(1, history + 1):
                # Older versions differ in their first paragraph, as an edited article would.
                paragraphs = list(a.paragraphs) if number == history else [f"(Version {number}) " + a.paragraphs[0], *a.paragraphs[1:]]
                body = "\n\n".join(paragraphs)
                created = self.now - dt.timedelta(days=400 - 100 * number + rng.randint(0, 50))
                versions.append((ids[a.ref], number, a.title, body, hashlib.sha256(body.encode()).hexdigest(), a.updated_at,
                                 "import" if number == 1 else "edit", "", created))
        copy_rows(
            table(ArticleVersion),
            ["article_id", "number", "title", "body", "content_hash", "updated_at", "reason", "note", "created_at"],
            versions,
        )
        article_table, version_table = table(Article), table(ArticleVersion)
        execute(
            f"""UPDATE {article_table} a SET current_version_id = v.id, indexed_version_id = v.id
                FROM (SELECT DISTINCT ON (article_id) article_id, id FROM {version_table} ORDER BY article_id, number DESC) v
                WHERE v.article_id = a.id AND a.knowledge_base_id = %s""",
            [self.kb.pk],
        )
        # Article ordinal -> id, current version, first sentence (the conflicting snippet): a scratch table
        # the conflict generator joins; shuffled so a conflict's two articles are far apart in id.
        execute("DROP TABLE IF EXISTS bench_article")
        execute(
            f"""CREATE UNLOGGED TABLE bench_article AS
                SELECT (row_number() OVER (ORDER BY md5(a.id::text)) - 1)::int AS n, a.id, a.title,
                       a.current_version_id AS version_id,
                       split_part(replace(v.body, E'\\n', ' '), '. ', 1) || '.' AS sentence,
                       v.body
                FROM {article_table} a JOIN {version_table} v ON v.id = a.current_version_id
                WHERE a.knowledge_base_id = %s""",
            [self.kb.pk],
        )
        execute("CREATE UNIQUE INDEX ON bench_article (n)")
        execute("CREATE UNIQUE INDEX ON bench_article (id)")
        # Questions and replies for the turns: real-looking texts, reused round-robin.
        questions = common.generate_questions(400, seed=SEED)
        replies = []
        for a in generated[:600]:
            paragraph = a.paragraphs[rng.randrange(len(a.paragraphs))]
            replies.append(f"Thanks for getting in touch. {paragraph} [[{a.ref}]]\n\nIs there anything else I can help with?")
        execute("DROP TABLE IF EXISTS bench_question")
        execute("DROP TABLE IF EXISTS bench_reply")
        execute("CREATE UNLOGGED TABLE bench_question (n int PRIMARY KEY, text text)")
        execute("CREATE UNLOGGED TABLE bench_reply (n int PRIMARY KEY, text text)")
        copy_rows("bench_question", ["n", "text"], enumerate(questions))
        copy_rows("bench_reply", ["n", "text"], enumerate(replies))

    # conflicts and occurrences ------------------------------------------------------------------------

    def grow(self, *, conflicts: int, occurrences: int) -> None:
        """Add conflicts [self.conflicts, conflicts) and occurrences up to `occurrences` in total."""
        from articles.models import Article
        from conflicts.models import Conflict, ConflictActivity, ConflictOccurrence, ResolutionSuggestion, Turn

        article_table = table(Article)
        first, new_conflicts = self.conflicts, conflicts - self.conflicts
        new_occurrences = occurrences - self.occurrences
        assert new_conflicts >= 0 and new_occurrences >= new_conflicts, "each conflict needs an occurrence"
        assert conflicts < self.n_articles * (self.n_articles // 2 - 1), "too few articles for that many distinct pairs"
        seed = (SEED % 1000 + first) / 1e6
        execute("SELECT setseed(%s)", [seed])
        # Pair n: articles (n mod A) and (n mod A + 1 + n div A) mod A in the shuffled order: distinct pairs.
        params = {"kb": self.kb.pk, "first": first, "last": conflicts - 1, "a": self.n_articles, "now": self.now,
                  "reviewer": self.reviewer.pk, "types": TYPES}
        execute("DROP TABLE IF EXISTS bench_new_conflict")
        execute(
            """CREATE UNLOGGED TABLE bench_new_conflict AS
               SELECT g.n, least(x.id, y.id) AS low_id, greatest(x.id, y.id) AS high_id,
                      CASE WHEN x.id < y.id THEN x.sentence ELSE y.sentence END AS snippet_low,
                      CASE WHEN x.id < y.id THEN y.sentence ELSE x.sentence END AS snippet_high,
                      CASE WHEN x.id < y.id THEN x.version_id ELSE y.version_id END AS version_low,
                      CASE WHEN x.id < y.id THEN y.version_id ELSE x.version_id END AS version_high,
                      x.title AS title_x, y.title AS title_y,
                      CASE WHEN r.s < 0.60 THEN 'open' WHEN r.s < 0.88 THEN 'processed' ELSE 'dismissed' END AS status,
                      (%(types)s::text[])[1 + floor(r.t * cardinality(%(types)s::text[]))::int] AS type,
                      r.u AS u, r.w AS w
               FROM generate_series(%(first)s, %(last)s) g(n)
               -- g.n inside makes the lateral correlated, so random() is drawn per row, not once
               CROSS JOIN LATERAL (SELECT random() + 0 * g.n AS s, random() + 0 * g.n AS t,
                                          random() + 0 * g.n AS u, random() + 0 * g.n AS w) r
               JOIN bench_article x ON x.n = mod(g.n, %(a)s)
               JOIN bench_article y ON y.n = mod(mod(g.n, %(a)s) + 1 + g.n / %(a)s, %(a)s)""",
            params,
        )
        reviewed = "c.status <> 'open'"
        insert_select(
            Conflict,
            {
                "knowledge_base_id": "%(kb)s",
                "article_low_id": "c.low_id",
                "article_high_id": "c.high_id",
                "status": "c.status",
                "type": "c.type",
                "explanation": "'The two articles disagree on the ' || c.type || ': \"' || c.snippet_low || '\" versus \"' "
                               "|| c.snippet_high || '\". A reply may quote either.'",
                "snippet_low": "c.snippet_low",
                "snippet_high": "c.snippet_high",
                "detector": "CASE WHEN c.u < 0.7 THEN 'claims' ELSE 'llm' END",
                "first_seen": "%(now)s",
                "last_seen": "%(now)s",
                "times_seen": "0",
                "times_cited": "0",
                "impact": "0",
                # ~5% of open conflicts came back after a review (regressed)
                "substatus": "CASE WHEN c.status = 'open' AND c.w < 0.05 THEN 'regressed' ELSE '' END",
                "recurred_after_review": "(c.status = 'open' AND c.w < 0.05)",
                "reviewed_by_id": f"CASE WHEN {reviewed} THEN %(reviewer)s END",
                "reviewed_at": f"CASE WHEN {reviewed} THEN %(now)s - c.w * interval '60 days' END",
                "review_note": "CASE WHEN c.status = 'processed' THEN 'Kept the newer figure; the older article was corrected.' "
                               "WHEN c.status = 'dismissed' THEN 'Intentional: the two articles cover different regions.' ELSE '' END",
                "winner": "CASE WHEN c.status = 'processed' THEN (CASE WHEN c.u < 0.5 THEN 'low' ELSE 'high' END) "
                          "WHEN c.status = 'dismissed' THEN 'both' ELSE '' END",
                "reviewed_version_low_id": f"CASE WHEN {reviewed} THEN c.version_low END",
                "reviewed_version_high_id": f"CASE WHEN {reviewed} THEN c.version_high END",
            },
            "FROM bench_new_conflict c ORDER BY c.n",
            params,
        )
        conflict_table = table(Conflict)
        # Conflict ordinal -> id (inserted in ordinal order).
        if first == 0:
            execute("DROP TABLE IF EXISTS bench_conflict")
            execute("CREATE UNLOGGED TABLE bench_conflict (n int PRIMARY KEY, id bigint)")
        execute(
            f"""INSERT INTO bench_conflict (n, id)
                SELECT %(first)s + row_number() OVER (ORDER BY id) - 1, id FROM {conflict_table}
                WHERE knowledge_base_id = %(kb)s AND id > coalesce((SELECT max(id) FROM bench_conflict), 0)""",
            params,
        )
        self.conflicts = conflicts

        # Occurrences: first one for every new conflict, then a power law over all conflicts.
        turn_table = table(Turn)
        occ = {"kb": self.kb.pk, "start": self.occurrences, "stop": occurrences - 1, "base": new_conflicts,
               "first": first, "n": conflicts, "now": self.now,
               "questions": execute("SELECT count(*) FROM bench_question")[0][0],
               "replies": execute("SELECT count(*) FROM bench_reply")[0][0]}
        execute("DROP TABLE IF EXISTS bench_occ")
        execute(
            f"""CREATE UNLOGGED TABLE bench_occ AS
                SELECT nextval(pg_get_serial_sequence('{turn_table}', 'id')) AS turn_id, g.m,
                       CASE WHEN g.m - %(start)s < %(base)s THEN %(first)s + (g.m - %(start)s)
                            ELSE mod(floor(%(n)s * power(random(), 3))::bigint * 7907, %(n)s)::int END AS conflict_n,
                       %(now)s - (90 * power(random(), 2) + 0.01) * interval '1 day' AS created_at,
                       CASE WHEN random() < 0.3 THEN (CASE WHEN random() < 0.2 THEN 'both' ELSE 'one' END)
                            ELSE 'neither' END AS citation
                FROM generate_series(%(start)s, %(stop)s) g(m)""",
            occ,
        )
        insert_select(
            Turn,
            {
                "id": "o.turn_id",
                "knowledge_base_id": "%(kb)s",
                "external_id": "'bench-turn-' || o.m",
                "question": "q.text",
                "reply": "r.text",
                "reply_sent_at": "o.created_at - interval '2 seconds'",
                "source": "'api'",
                "created_at": "o.created_at - interval '4 seconds'",
            },
            "FROM bench_occ o JOIN bench_question q ON q.n = mod(o.m, %(questions)s) "
            "JOIN bench_reply r ON r.n = mod(o.m * 7, %(replies)s) ORDER BY o.turn_id",
            occ,
        )
        insert_select(
            ConflictOccurrence,
            {
                "conflict_id": "bc.id",
                "turn_id": "o.turn_id",
                "version_low_id": "al.current_version_id",
                "version_high_id": "ah.current_version_id",
                "detector": "c.detector",
                "citation": "o.citation",
                "created_at": "o.created_at",
            },
            f"""FROM bench_occ o JOIN bench_conflict bc ON bc.n = o.conflict_n
                JOIN {conflict_table} c ON c.id = bc.id
                JOIN {article_table} al ON al.id = c.article_low_id
                JOIN {article_table} ah ON ah.id = c.article_high_id
                ORDER BY o.turn_id""",
            occ,
        )
        self.occurrences = occurrences
        self._refresh_counters()

        # Activity for the new conflicts: opened at first_seen; resolved/dismissed (or regressed) after it.
        activity = {"kb": self.kb.pk, "first": first, "reviewer": self.reviewer.pk}
        new = f"FROM {conflict_table} c JOIN bench_conflict bc ON bc.id = c.id AND bc.n >= %(first)s"
        insert_select(ConflictActivity, {
            "conflict_id": "c.id", "kind": "'opened'", "from_status": "'open'", "to_status": "'open'",
            "created_at": "c.first_seen"}, new, activity)
        insert_select(ConflictActivity, {
            "conflict_id": "c.id", "kind": "CASE WHEN c.status = 'processed' THEN 'resolved' ELSE 'dismissed' END",
            "actor_id": "%(reviewer)s", "from_status": "'open'", "to_status": "c.status", "note": "c.review_note",
            "created_at": "c.reviewed_at"}, new + " WHERE c.status <> 'open'", activity)
        insert_select(ConflictActivity, {
            "conflict_id": "c.id", "kind": "'regressed'", "from_status": "'processed'", "to_status": "'open'",
            "created_at": "c.last_seen"}, new + " WHERE c.substatus = 'regressed'", activity)
        insert_select(ResolutionSuggestion, {
            "conflict_id": "c.id", "status": "'suggested'",
            "winner_id": "CASE WHEN mod(c.id, 2) = 0 THEN c.article_low_id ELSE c.article_high_id END",
            "explanation": "'The statement with the more recent date wins: ' || c.snippet_high",
            "rules": "'[{\"id\": \"newer-date-wins\", \"coverage\": 0.21, \"support\": 0.83}]'::jsonb",
            "confidence": "0.83",
            "edit_article_id": "CASE WHEN mod(c.id, 2) = 0 THEN c.article_high_id ELSE c.article_low_id END",
            "proposed_edit": "c.snippet_low",
            "version_low_id": "al.current_version_id", "version_high_id": "ah.current_version_id",
            "computed_at": "c.first_seen"},
            new + f""" JOIN {article_table} al ON al.id = c.article_low_id
                      JOIN {article_table} ah ON ah.id = c.article_high_id
                      WHERE mod(c.id * 2654435761, 10) < 3""", activity)
        from django.db import connection

        with connection.cursor() as cursor:  # what autovacuum would have done by the time anyone looks
            for model in (Conflict, ConflictOccurrence, Turn, ConflictActivity, ResolutionSuggestion):
                cursor.execute(f"VACUUM ANALYZE {table(model)}")

    def _refresh_counters(self) -> None:
        """times_seen, times_cited, first/last_seen and impact from the occurrences, as detection keeps them."""
        from conflicts.models import Conflict, ConflictOccurrence
        from conflicts.services.detection import IMPACT_EPOCH, IMPACT_HALF_LIFE_S

        execute(
            f"""UPDATE {table(Conflict)} c SET times_seen = s.n, times_cited = s.cited, first_seen = s.first_seen,
                       last_seen = s.last_seen, impact = s.top + ln(s.total)
                FROM (SELECT p.conflict_id, count(*) AS n, count(*) FILTER (WHERE p.citation <> 'neither') AS cited,
                             min(p.created_at) AS first_seen, max(p.created_at) AS last_seen,
                             max(p.top) AS top, sum(exp(p.point - p.top)) AS total
                      FROM (SELECT o.conflict_id, o.citation, o.created_at, q.point,
                                   max(q.point) OVER (PARTITION BY o.conflict_id) AS top
                            FROM {table(ConflictOccurrence)} o
                            CROSS JOIN LATERAL (SELECT extract(epoch FROM o.created_at - %(epoch)s) / %(half_life)s * ln(2) AS point) q
                            JOIN {table(Conflict)} k ON k.id = o.conflict_id AND k.knowledge_base_id = %(kb)s) p
                      GROUP BY p.conflict_id) s
                WHERE c.id = s.conflict_id""",
            {"epoch": IMPACT_EPOCH, "half_life": float(IMPACT_HALF_LIFE_S), "kb": self.kb.pk},
        )

    def describe(self) -> str:
        from conflicts.models import Conflict

        rows = execute(
            f"""SELECT count(*), count(*) FILTER (WHERE status = 'open'), count(*) FILTER (WHERE status = 'processed'),
                       count(*) FILTER (WHERE status = 'dismissed'), sum(times_seen), max(times_seen),
                       percentile_disc(0.5) WITHIN GROUP (ORDER BY times_seen),
                       percentile_disc(0.99) WITHIN GROUP (ORDER BY times_seen), count(*) FILTER (WHERE times_cited > 0)
                FROM {table(Conflict)} WHERE knowledge_base_id = %s""",
            [self.kb.pk],
        )[0]
        total, open_, processed, dismissed, occurrences, top, median, p99, cited = rows
        return (f"{total} conflicts (open {open_}, resolved {processed}, dismissed {dismissed}; {cited} cited), "
                f"{occurrences} occurrences (per conflict: median {median}, p99 {p99}, max {top})")
