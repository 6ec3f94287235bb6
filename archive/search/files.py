"""The text of a message's files in its search: `content:` and `transcript:` find a message
by the text of one of its attachments (compiler.py); this says which file a hit matched in,
on which page, and where in its text — or, for a plain word found in a file's name, that
name.

The files' words index keeps itself (triggers on the text rows); its stems index is filled
by the files' drain. A search only reads the state that drain records, as the messages' and
the notes' searches read theirs: the stems when the index was made by today's analyzer, else
the words index alone.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from django.db import connection

from archive.search.analyzer import Analyzer
from archive.search.compiler import FileWords, file_term
from archive.search.models import SearchConfig
from archive.search.parser import FILE_TEXT_FIELDS, Filter, Group, Node
from archive.search.querykit import WORD_KINDS, highlights, stem_alternatives, term_match
from archive.search.services.index import MESSAGE_STEMS, search_analyzer
from archive.search.services.stems_queue import StemsQueue, StemsReading

# The files' stems index as a search reads it (recorded analyzer, queue); it is written by
# the files' own drain, never from here, so the rebuild and the texts are not needed.
_FILE_STEMS = StemsQueue(
    stems="attachment_stems",
    queue="archive_attachment_stem_queue",
    key="attachment_id",
    state="archive_attachment_search_state",
    requeue=(),
    texts="",
    documents="archive_attachmenttext",
)
PAGE_BREAK = "\f"  # a paged reader's page separator in a file's text
# A plain word of the query as `word_filters` gives it: found in a file's text or its name.
WORDS = "words"


@dataclass(frozen=True)
class SearchReading:
    """What a message search may use, read at once: the messages' stems index and the
    files' (each as `StemsQueue.reading` tells it), and which sets of files a word also
    looks in: their text once any file has some, their names once any file exists (until
    then, a word is looked for in messages alone)."""

    stems: StemsReading
    file_stems: StemsReading
    file_text: FileWords


def search_reading() -> SearchReading:
    """The settings, both stems indexes' state and whether files have text or exist, in one
    statement (a search reads them on every keystroke): reads only."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT latin_stemmers FROM {MESSAGE_STEMS.state} WHERE id = 1),"
            f" (SELECT stems_analyzer FROM {MESSAGE_STEMS.state} WHERE id = 1),"
            f" EXISTS (SELECT 1 FROM {MESSAGE_STEMS.queue}),"
            f" EXISTS (SELECT 1 FROM {MESSAGE_STEMS.documents}),"
            f" (SELECT stems_analyzer FROM {_FILE_STEMS.state} WHERE id = 1),"
            f" EXISTS (SELECT 1 FROM {_FILE_STEMS.queue}),"
            f" EXISTS (SELECT 1 FROM {_FILE_STEMS.documents} WHERE state = 'done'),"
            " EXISTS (SELECT 1 FROM archive_attachment)"
        )
        row = cursor.fetchone()
    latin, made_by, waiting, messages, files_made_by, files_waiting, text, named = row
    config = SearchConfig() if latin is None else SearchConfig(latin_stemmers=latin)
    analyzer = search_analyzer(config)
    return SearchReading(
        stems=_reading(analyzer, made_by, bool(waiting), bool(messages)),
        file_stems=_reading(analyzer, files_made_by, bool(files_waiting), bool(text)),
        file_text=FileWords(text=bool(text), names=bool(named)),
    )


def _reading(analyzer: Analyzer, made_by: str | None, waiting: bool, any_: bool) -> StemsReading:
    # As StemsQueue.reading: an index another analyzer made (or none) is not read at all.
    if (made_by or "") != analyzer.signature:
        return StemsReading(analyzer=None, behind=any_)
    return StemsReading(analyzer=analyzer, behind=waiting)


def word_filters(node: Node) -> list[Filter]:
    """The query's positive words, phrases and prefixes as operators of their own (`WORDS`,
    read as `content:` is, and in files' names too): what a hit found by its files (not its
    own text) matched there."""
    if isinstance(node, Group):
        if node.negated:
            return []
        return [found for item in node.items for found in word_filters(item)]
    if isinstance(node, Filter) or node.negated or node.kind not in WORD_KINDS:
        return []
    value = node.text + ("*" if node.kind == "prefix" else "")
    return [Filter(WORDS, value, exact=node.kind == "phrase" or node.exact)]


def file_filters(node: Node) -> list[Filter]:
    """The `content:` and `transcript:` operators a hit must hold (outside any negation)."""
    if isinstance(node, Filter):
        return [node] if node.name in FILE_TEXT_FIELDS and not node.negated else []
    if isinstance(node, Group) and not node.negated:
        return [found for item in node.items for found in file_filters(item)]
    return []


@dataclass(frozen=True)
class FileMatch:
    """Where a hit matched in a file: the attachment (att_…), its name, the page the first
    match is on (None for a text without pages), its text and the patterns marking the
    match."""

    attachment: str
    file_name: str
    page: int | None
    text: str
    patterns: tuple[str, ...]


def _attachments(found: Filter, analyzer: Analyzer | None) -> tuple[str, list[str]]:
    """SQL of the attachment ids whose text holds the operator's words, and its values."""
    term = file_term(found)
    params = [term_match(term)]
    sql = "SELECT rowid FROM attachment_words WHERE attachment_words MATCH %s"
    stems = stem_alternatives(term, analyzer)
    if stems:
        sql += " UNION SELECT rowid FROM attachment_stems WHERE attachment_stems MATCH %s"
        params.append(stems)
    if found.name == "transcript":
        sql = (
            "SELECT t.attachment_id FROM archive_attachmenttext AS t WHERE"
            f" t.extractor LIKE 'speech:%%' AND t.attachment_id IN ({sql})"
        )
    return sql, params


def page_of(text: str, at: int) -> int | None:
    """The page (from 1) of the character `at` in a paged text; None when it has no pages."""
    if PAGE_BREAK not in text:
        return None
    return text.count(PAGE_BREAK, 0, max(at, 0)) + 1


def file_matches(
    found: list[Filter], message_ids: list[int], analyzer: Analyzer | None
) -> dict[int, FileMatch]:
    """For each of the messages, the first of its files (by attachment) whose text holds
    one of the operators' words; for the query's own words (`WORDS`) also whose name holds
    them, the file chosen as the search ranks it: a voice note's transcript, then a name,
    then other text. One statement, whatever the number of hits."""
    if not found or not message_ids:
        return {}
    selects: list[str] = []
    params: list[str] = []
    for operator in found:
        sql, values = _attachments(operator, analyzer)
        selects.append(sql)
        params.extend(values)
    hits = json.dumps(message_ids)
    words = [operator for operator in found if operator.name == WORDS]
    # A file's rank among a message's matches (0: by attachment alone, for `content:`).
    tier = "CASE WHEN t.extractor LIKE 'speech:%%' THEN 1 ELSE 3 END" if words else "0"
    sql = (
        f"SELECT f.message_id, f.public_id, f.file_name, t.text, {tier}, f.id"
        " FROM archive_attachment AS f"
        " CROSS JOIN archive_attachmenttext AS t ON t.attachment_id = f.id"
        " WHERE f.message_id IN (SELECT value FROM json_each(%s))"
        f" AND f.id IN ({' UNION '.join(selects)})"
    )
    values = [hits, *params]
    if words:
        named = " UNION ".join(
            "SELECT rowid FROM attachment_names WHERE attachment_names MATCH %s" for _ in words
        )
        sql = (
            f"SELECT * FROM ({sql} UNION ALL SELECT f.message_id, f.public_id, f.file_name,"
            " NULL, 2, f.id FROM archive_attachment AS f"
            " WHERE f.message_id IN (SELECT value FROM json_each(%s))"
            f" AND f.id IN ({named}))"
        )
        values.extend([hits, *(term_match(file_term(operator)) for operator in words)])
    with connection.cursor() as cursor:
        cursor.execute(f"{sql} ORDER BY 1, 5, 6", values)
        rows = cursor.fetchall()
    patterns = tuple(highlights(Group("and", tuple(file_term(f) for f in found)), analyzer))
    marker = re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)
    matches: dict[int, FileMatch] = {}
    for message_id, public_id, file_name, text, _, _ in rows:
        if int(message_id) in matches:
            continue
        if text is None:  # found by its name: the name is what shows the match
            matches[int(message_id)] = FileMatch(
                attachment=str(public_id),
                file_name=str(file_name),
                page=None,
                text=str(file_name),
                patterns=patterns,
            )
            continue
        first = marker.search(text)
        matches[int(message_id)] = FileMatch(
            attachment=str(public_id),
            file_name=str(file_name),
            page=page_of(text, first.start() if first else 0),
            text=str(text),
            patterns=patterns,
        )
    return matches
