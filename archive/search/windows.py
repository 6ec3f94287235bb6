"""Relevance search by windows: candidates come from the indexes newest first, a window at a
time, and are ranked within their window.

Scoring every match of a common word (bm25 reads each match's column sizes) costs time in
proportion to the matches: at a million messages a word in one message of ten took ~200 ms
before the first hit could be shown. A window is the newest `WINDOW` matches of each index
(by rowid, the order messages were stored in); its hits are ranked — exact forms by the
words index's bm25, then stem-only matches by the stems index's bm25, newer first among
equals — and shown, and the next page continues in the same window and then in the next,
older one. A query that matches fewer than `WINDOW` messages is one window: ranked as a
whole. When a window's candidates mostly fail the query's other conditions, the next window
is larger (up to `WINDOW_MAX`), so a rare combination costs a few scans, not one per window.

Filters an index answers (`from:`, `in:`, `source:`, dates) narrow the scan itself when
they hold few messages: the MATCH then runs over just their rows.

When the archive holds files, the words also find the messages one of whose files holds
them, in its text (the plan's `files`) or its name (`names`): those are a third candidate set
of the window (by message id, as the others), ranked after every message whose own text
matched — a voice note's transcript, then a file's name, then other files' text.

The notes' search ranks its notes the same way: a `Corpus` names the documents' table and
indexes, their bm25 and the window sizes (`messages()` is the messages'), and `position`
and `ranked_page` take one.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from django.db import connection

from archive.search.compiler import Compiled, Plan
from wirecat.errors import Invalid

WINDOW = 2_000
WINDOW_MAX = 64_000
SCOPE_MAX = 20_000  # a filter holding more messages than this is checked per candidate
_TOP = 2**62  # above every rowid


@dataclass(frozen=True)
class Corpus:
    """What a search by windows ranks: the documents' `table` (with its alias) and `id`,
    their words, stems and trigram indexes (an index row's rowid is its document's id), the
    bm25 of an exact match and of a stem-only one, the `order` among equal scores, what
    every hit must also hold (`kept`, SQL; "" for nothing), and the window sizes: the first
    window, the largest, and the most documents a filter may hold to narrow the scan."""

    table: str
    id: str
    words: str
    stems: str
    trigram: str
    words_score: str
    stems_score: str
    order: str
    kept: str
    window: int
    window_max: int
    scope_max: int


def messages(compiled: Compiled | None = None) -> Corpus:
    """The messages, with the sizes as this module holds them when asked (a test may change
    them); the deleted left out unless `compiled` asks for them."""
    deleted = compiled is not None and compiled.include_deleted
    return Corpus(
        table="archive_message AS m",
        id="m.id",
        words="message_fts",
        stems="message_stems",
        trigram="message_trigram",
        words_score="bm25(message_fts)",
        stems_score="bm25(message_stems)",
        order="m.sent_at DESC, m.id DESC",
        kept="" if deleted else "m.deleted_at IS NULL",
        window=WINDOW,
        window_max=WINDOW_MAX,
        scope_max=SCOPE_MAX,
    )


@dataclass(frozen=True)
class Position:
    """Where a page starts: in the window of rowids below `below`, of `size` candidates
    per index, after its first `skip` ranked hits."""

    below: int
    size: int
    skip: int

    @property
    def first(self) -> bool:
        return self.below == _TOP and self.skip == 0

    def token(self) -> str:
        raw = f"w{self.below}.{self.size}.{self.skip}"
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def position(cursor: str | None, corpus: Corpus) -> Position:
    """The position a windowed search's cursor names (Invalid for anything else)."""
    if not cursor:
        return Position(_TOP, corpus.window, 0)
    problem = Invalid("cursor: not a cursor this search gave out")
    try:
        raw = base64.urlsafe_b64decode(cursor.encode("ascii") + b"==").decode("ascii")
        below, size, skip = (int(part) for part in raw.removeprefix("w").split("."))
    except (ValueError, binascii.Error, UnicodeError) as exc:
        raise problem from exc
    if not raw.startswith("w") or not (
        0 < below <= _TOP and 1 <= size <= corpus.window_max and 0 <= skip <= 2 * corpus.window_max
    ):
        raise problem
    return Position(below, size, skip)


@dataclass(frozen=True)
class _Sql:
    """The window's candidate CTEs (`found` with rowid, the words index's bm25 of an
    exact match and the stems index's of a stem-only one, `edge` with the
    lowest rowid the window covers) and what a candidate must still satisfy."""

    ctes: str
    params: list[str | int]
    where: str
    where_params: list[str]


def _narrow(plan: Plan, corpus: Corpus) -> bool:
    """Whether the plan's index-driven filters hold few enough documents to scan within."""
    if not plan.scope:
        return False
    with connection.cursor() as db:
        db.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {corpus.table}"
            f" WHERE {plan.scope} LIMIT {corpus.scope_max + 1})",
            plan.scope_params,
        )
        return int(db.fetchone()[0]) <= corpus.scope_max


# A voice note's transcript (its text row written by a speech reader).
_SPEECH = (
    "EXISTS (SELECT 1 FROM archive_attachmenttext AS t WHERE t.attachment_id = f.id"
    " AND t.extractor LIKE 'speech:%%')"
)


def _by_files(plan: Plan) -> bool:
    return plan.files is not None or plan.names is not None


def _file_ids(plan: Plan) -> tuple[list[str], list[str | int], str, str]:
    """CTEs of the attachment ids whose text (`file_texts`) or name (`file_names`) holds
    the plan's words, their values, SQL of the ids of either, and a found file's tier among
    the candidates found by a file: a voice note's transcript (1), a file's name (2), other
    files' text (3); messages whose own text matched are tier 0."""
    ctes: list[str] = []
    params: list[str | int] = []
    ids: list[str] = []
    if plan.files is not None:
        sql = "SELECT rowid FROM attachment_words WHERE attachment_words MATCH %s"
        params.append(plan.files)
        if plan.file_stems is not None:
            sql += " UNION SELECT rowid FROM attachment_stems WHERE attachment_stems MATCH %s"
            params.append(plan.file_stems)
        ctes.append(f"file_texts AS MATERIALIZED ({sql})")
        ids.append("SELECT rowid FROM file_texts")
    if plan.names is not None:
        ctes.append(
            "file_names AS MATERIALIZED (SELECT rowid FROM attachment_names"
            " WHERE attachment_names MATCH %s)"
        )
        params.append(plan.names)
        ids.append("SELECT rowid FROM file_names")
    if plan.files is None:
        tier = "2"
    elif plan.names is None:
        tier = f"CASE WHEN {_SPEECH} THEN 1 ELSE 3 END"
    else:
        tier = (
            f"CASE WHEN f.id IN file_texts AND {_SPEECH} THEN 1"
            " WHEN f.id IN file_names THEN 2 ELSE 3 END"
        )
    return ctes, params, " UNION ".join(ids), tier


def _window_sql(
    plan: Plan, corpus: Corpus, narrow: bool, below: int, size: int, scored: bool
) -> _Sql:
    params: list[str | int] = []
    ctes: list[str] = []
    within = ""
    if narrow:
        ctes.append(
            f"scope AS MATERIALIZED (SELECT {corpus.id} FROM {corpus.table} WHERE {plan.scope})"
        )
        params.extend(plan.scope_params)
        within = " AND +rowid IN scope"
    edges: list[str] = []

    def window(name: str, table: str, match: str, columns: str, also: str | None = None) -> None:
        extra = ""
        if also is not None:
            extra = (
                f" AND +rowid IN (SELECT rowid FROM {corpus.words} WHERE {corpus.words} MATCH %s)"
            )
        ctes.append(
            f"{name} AS MATERIALIZED (SELECT {columns} FROM {table} WHERE {table} MATCH %s"
            f" AND rowid < %s{within}{extra} ORDER BY rowid DESC LIMIT {size})"
        )
        params.extend([match, below] if also is None else [match, below, also])
        # A full window ends at its lowest rowid; a short one reaches the first document.
        edges.append(f"coalesce((SELECT min(rowid) FROM {name} HAVING count(*) >= {size}), 0)")

    if plan.words is not None:
        score = corpus.words_score if scored else "NULL"
        window("words", corpus.words, plan.words, f"rowid, {score} AS score")
        found = "SELECT rowid, score, NULL AS by_stem FROM words"
        if plan.stems is not None:
            by_stem = corpus.stems_score if scored else "NULL"
            window(
                "stems",
                corpus.stems,
                plan.stems,
                f"rowid, {by_stem} AS by_stem",
                plan.stems_also,
            )
            found += (
                " UNION ALL SELECT rowid, NULL, by_stem FROM stems"
                " WHERE rowid NOT IN (SELECT rowid FROM words)"
            )
    else:
        window("grams", corpus.trigram, str(plan.trigram), "rowid, NULL AS score")
        found = "SELECT rowid, score, NULL AS by_stem FROM grams"
    if _by_files(plan):
        # The newest `size` messages found by a file, each at its best file's tier.
        file_ctes, files_params, files, tier = _file_ids(plan)
        ctes.extend(file_ctes)
        ctes.append(
            f"files AS MATERIALIZED (SELECT f.message_id AS rowid, min({tier}) AS tier"
            f" FROM archive_attachment AS f WHERE f.id IN ({files}) AND f.message_id < %s"
            f"{within.replace('+rowid', '+f.message_id')} GROUP BY f.message_id"
            f" ORDER BY f.message_id DESC LIMIT {size})"
        )
        params.extend([*files_params, below])
        edges.append(f"coalesce((SELECT min(rowid) FROM files HAVING count(*) >= {size}), 0)")
        found = (
            f"SELECT rowid, score, by_stem, 0 AS tier FROM ({found}) UNION ALL SELECT rowid,"
            " NULL, NULL, tier FROM files WHERE rowid NOT IN (SELECT rowid FROM words)"
        )
        if plan.stems is not None:
            found += " AND rowid NOT IN (SELECT rowid FROM stems)"
    ctes.append(f"edge AS MATERIALIZED (SELECT max({', '.join(edges)}, 0) AS lo)")
    ctes.append(f"found AS ({found})")
    where = [plan.rest]
    where_params = list(plan.rest_params)
    if plan.scope and not narrow:
        where.append(plan.scope)
        where_params.extend(plan.scope_params)
    if corpus.kept:
        where.append(corpus.kept)
    return _Sql("WITH " + ", ".join(ctes), params, " AND ".join(where), where_params)


def ranked_page(
    plan: Plan, corpus: Corpus, *, limit: int, start: Position
) -> tuple[list[tuple[int, float | None]], Position | None]:
    """One page of (document id, bm25 or None) from `start`, and where the next page
    starts."""
    narrow = _narrow(plan, corpus)
    found: list[tuple[int, float | None, Position]] = []
    below, size, skip = start.below, start.size, start.skip
    while True:
        need = limit + 1 - len(found)
        window = _window_sql(plan, corpus, narrow, below, size, scored=True)
        # Found by a file: after every message whose own text matched.
        tier = "found.tier, " if _by_files(plan) else ""
        sql = (
            f"{window.ctes} SELECT * FROM (SELECT {corpus.id}, found.score FROM edge"
            f" CROSS JOIN found CROSS JOIN {corpus.table} ON {corpus.id} = found.rowid"
            f" WHERE found.rowid >= edge.lo AND {window.where}"
            f" ORDER BY {tier}found.score IS NULL, found.score, found.by_stem,"
            f" {corpus.order}"
            " LIMIT %s OFFSET %s) UNION ALL SELECT NULL, lo FROM edge"
        )
        with connection.cursor() as db:
            db.execute(sql, [*window.params, *window.where_params, need, skip])
            rows = db.fetchall()
        low = int(rows[-1][1])
        for index, (doc_id, score) in enumerate(rows[:-1]):
            ranked = float(score) if score is not None else None
            found.append((int(doc_id), ranked, Position(below, size, skip + index)))
        if len(found) > limit or low <= 0:
            break
        # This window is spent: the next, older one, larger when this one gave little.
        if len(rows) - 1 < need // 2:
            size = min(size * 4, corpus.window_max)
        below, skip = low, 0
    following = found[limit][2] if len(found) > limit else None
    return [(doc_id, score) for doc_id, score, _ in found[:limit]], following


def facet_sample(compiled: Compiled, plan: Plan, sample: int) -> tuple[str, list[str | int]]:
    """SQL of (chat_id, sender_id, account_id, year, lo) over the newest `sample` candidates
    of each index: every match whose rowid is above `lo`, where the windows end (0 when
    they reached the first message: then these are all the matches). Each window holds
    one candidate more than counted, so a query with exactly `sample` matches is known
    whole. At most twice `sample` rows (one window per index)."""
    corpus = messages(compiled)
    window = _window_sql(plan, corpus, _narrow(plan, corpus), _TOP, sample + 1, scored=False)
    sql = (
        f"{window.ctes} SELECT m.chat_id, m.sender_id, m.account_id,"
        " substr(m.sent_at, 1, 4) AS year, edge.lo AS lo FROM edge CROSS JOIN found"
        " CROSS JOIN archive_message AS m ON m.id = found.rowid"
        f" WHERE found.rowid > edge.lo AND {window.where}"
    )
    return sql, [*window.params, *window.where_params]


# --- newest and oldest ------------------------------------------------------------------

SMALL = 20_000  # an index match set this small is read whole
CHUNK = 5_000  # messages per step of a time walk (grows when a step finds little)
CHUNK_MAX = 320_000
# The stored text of sent_at, as the keys compare it (a bare column would come back as a
# datetime through the driver's converters).
_TEXT_TIME = "CAST(m.sent_at AS TEXT)"


@dataclass(frozen=True)
class Key:
    """A hit's place in time order: the next page starts strictly past it."""

    sent_at: str
    id: int

    def token(self) -> str:
        raw = f"t{self.id}|{self.sent_at}"
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def key(cursor: str | None) -> Key | None:
    """The key a time-ordered search's cursor names (Invalid for anything else)."""
    if not cursor:
        return None
    problem = Invalid("cursor: not a cursor this search gave out")
    try:
        raw = base64.urlsafe_b64decode(cursor.encode("ascii") + b"==").decode("ascii")
        number, sent_at = raw.removeprefix("t").split("|", 1)
        message_id = int(number)
    except (ValueError, binascii.Error, UnicodeError) as exc:
        raise problem from exc
    if not raw.startswith("t") or not 1 <= message_id < _TOP or not 10 <= len(sent_at) <= 40:
        raise problem
    return Key(sent_at, message_id)


def _few(plan: Plan) -> bool:
    """Whether each index's part of the query matches few enough messages to read whole."""
    matches = []
    if plan.words is not None:
        matches.append(("message_fts", plan.words))
        if plan.stems is not None:
            matches.append(("message_stems", plan.stems))
    else:
        matches.append(("message_trigram", str(plan.trigram)))
    with connection.cursor() as db:
        for table, match in matches:
            db.execute(
                f"SELECT count(*) FROM (SELECT rowid FROM {table} WHERE {table} MATCH %s"
                f" LIMIT {SMALL + 1})",
                [match],
            )
            if int(db.fetchone()[0]) > SMALL:
                return False
        if _by_files(plan):
            file_ctes, params, files, _ = _file_ids(plan)
            db.execute(
                f"WITH {', '.join(file_ctes)} SELECT count(*) FROM ({files} LIMIT {SMALL + 1})",
                params,
            )
            if int(db.fetchone()[0]) > SMALL:
                return False
    return True


def _candidates(plan: Plan, within: str) -> tuple[str, list[str | int]]:
    """CTEs ending in `found` (rowid): every candidate of the plan, each MATCH limited by
    `within` (a condition on rowid, or "")."""
    ctes: list[str] = []
    params: list[str | int] = []
    if plan.words is not None:
        ctes.append(
            "words AS MATERIALIZED (SELECT rowid FROM message_fts"
            f" WHERE message_fts MATCH %s{within})"
        )
        params.append(plan.words)
        found = "SELECT rowid FROM words"
        if plan.stems is not None:
            also = ""
            if plan.stems_also is not None:
                also = " AND +rowid IN (SELECT rowid FROM message_fts WHERE message_fts MATCH %s)"
            ctes.append(
                "stems AS MATERIALIZED (SELECT rowid FROM message_stems"
                f" WHERE message_stems MATCH %s{within}{also})"
            )
            params.extend(
                [plan.stems] if plan.stems_also is None else [plan.stems, plan.stems_also]
            )
            found += " UNION SELECT rowid FROM stems"
    else:
        ctes.append(
            "grams AS MATERIALIZED (SELECT rowid FROM message_trigram"
            f" WHERE message_trigram MATCH %s{within})"
        )
        params.append(str(plan.trigram))
        found = "SELECT rowid FROM grams"
    if _by_files(plan):
        file_ctes, files_params, files, _ = _file_ids(plan)
        ctes.extend(file_ctes)
        ctes.append(
            "files AS MATERIALIZED (SELECT f.message_id AS rowid FROM archive_attachment AS f"
            f" WHERE f.id IN ({files}){within.replace('+rowid', '+f.message_id')})"
        )
        params.extend(files_params)
        found += " UNION SELECT rowid FROM files"
    ctes.append(f"found AS ({found})")
    return ", ".join(ctes), params


def timed_page(
    compiled: Compiled, plan: Plan, *, sort: str, limit: int, start: Key | None
) -> tuple[list[tuple[int, float | None]], Key | None]:
    """One page of message ids in time order (`newest` or `oldest`) past `start`.

    A query whose index parts match few messages (or whose filters hold few) reads its
    candidates whole. A common one walks the time index instead, a chunk of messages at a
    time, and keeps the chunk's candidates: the newest hits of a word in every tenth
    message are in the first chunk."""
    newest = sort == "newest"
    order = "DESC" if newest else "ASC"
    past = "<" if newest else ">"
    narrow = _narrow(plan, messages(compiled))
    where = [plan.rest]
    where_params: list[str | int] = list(plan.rest_params)
    if plan.scope and not narrow:
        where.append(plan.scope)
        where_params.extend(plan.scope_params)
    if not compiled.include_deleted:
        where.append("m.deleted_at IS NULL")
    found: list[tuple[int, str]] = []
    if narrow or _few(plan):
        ctes, params = _candidates(plan, " AND +rowid IN scope" if narrow else "")
        if narrow:
            ctes = (
                f"scope AS MATERIALIZED (SELECT m.id FROM archive_message AS m"
                f" WHERE {plan.scope}), {ctes}"
            )
            params = [*plan.scope_params, *params]
        bound = ""
        if start is not None:
            bound = f" AND (m.sent_at, m.id) {past} (%s, %s)"
            where_params.extend([start.sent_at, start.id])
        sql = (
            f"WITH {ctes} SELECT m.id, {_TEXT_TIME} FROM found"
            " CROSS JOIN archive_message AS m ON m.id = found.rowid"
            f" WHERE {' AND '.join(where)}{bound}"
            f" ORDER BY m.sent_at {order}, m.id {order} LIMIT %s"
        )
        with connection.cursor() as db:
            db.execute(sql, [*params, *where_params, limit + 1])
            found = [(int(row[0]), str(row[1])) for row in db.fetchall()]
    else:
        size = CHUNK
        at = start
        while len(found) <= limit:
            bound, bound_params = "", list[str | int]()
            if at is not None:
                bound, bound_params = (
                    f"WHERE (m.sent_at, m.id) {past} (%s, %s) ",
                    [at.sent_at, at.id],
                )
            ctes, params = _candidates(plan, " AND +rowid IN (SELECT id FROM chunk)")
            sql = (
                f"WITH chunk AS MATERIALIZED (SELECT m.id, m.sent_at FROM archive_message AS m"
                f" {bound}ORDER BY m.sent_at {order}, m.id {order} LIMIT {size}), {ctes}"
                f" SELECT * FROM (SELECT m.id, {_TEXT_TIME} FROM found"
                " CROSS JOIN archive_message AS m ON m.id = found.rowid"
                f" WHERE {' AND '.join(where)} ORDER BY m.sent_at {order}, m.id {order}"
                " LIMIT %s) UNION ALL SELECT * FROM (SELECT NULL, count(*) FROM chunk)"
                " UNION ALL SELECT * FROM (SELECT id, CAST(sent_at AS TEXT) FROM chunk"
                f" ORDER BY sent_at {'ASC' if newest else 'DESC'},"
                f" id {'ASC' if newest else 'DESC'} LIMIT 1)"
            )
            need = limit + 1 - len(found)
            with connection.cursor() as db:
                db.execute(sql, [*bound_params, *params, *where_params, need])
                rows = db.fetchall()
            split = next(i for i, row in enumerate(rows) if row[0] is None)
            found.extend((int(row[0]), str(row[1])) for row in rows[:split])
            walked = int(rows[split][1])
            if walked < size:
                break  # the walk reached the end of time
            last = rows[split + 1]
            at = Key(str(last[1]), int(last[0]))
            if split < need // 2:
                size = min(size * 4, CHUNK_MAX)
    following = None
    if len(found) > limit:
        message_id, sent_at = found[limit - 1]
        following = Key(sent_at, message_id)
    return [(message_id, None) for message_id, _ in found[:limit]], following
