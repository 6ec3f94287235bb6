"""Compiling a parsed query to SQL over `archive_message AS m`.

User text never reaches MATCH as syntax: every term becomes one FTS5 string literal (double
quotes doubled), bound as a parameter. Words, phrases and prefixes go to the words index
(`message_fts`); infixes and terms holding punctuation to the trigram index
(`message_trigram`), or, shorter than a trigram, to a bounded LIKE. Each term is one
`m.id IN (SELECT rowid …)` set, so a search reads each index once, never once per message.
`content:` and `transcript:` are sets of the same kind over the files' text index
(`attachment_words`, `attachment_stems`: rowid = attachment id), turned into their messages;
a plain word's files' names are looked up the same way, in `attachment_names`.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TypeGuard

from archive.conversations.domain import root_public_id
from archive.search.analyzer import Analyzer
from archive.search.parser import FILE_TEXT_FIELDS, WORD, Filter, Group, Node, Term
from archive.search.senders import Senders, sender_ids_sql
from wirecat.db.values import db_time

_AGE = re.compile(r"^(\d+)([dwmy])$")


def fts_string(text: str) -> str:
    """An FTS5 string literal: the text between double quotes, its own quotes doubled."""
    return '"' + text.replace('"', '""') + '"'


def like_pattern(text: str) -> str:
    """`%text%` for LIKE … ESCAPE '\\', the text's own wildcards escaped."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


@dataclass
class Compiled:
    where: str
    params: list[str]
    # The words-index MATCH for ranking (the query's positive words), when there is one.
    rank_match: str | None = None
    # Regular expressions (case-insensitive) marking the positive terms in snippets.
    highlights: list[str] = field(default_factory=list)
    include_deleted: bool = False
    # How a relevance search may draw its candidates index-first, newest window by window
    # (None: the query's shape needs the whole WHERE at once).
    plan: Plan | None = None


@dataclass(frozen=True)
class FileWords:
    """Which sets of a message's files a plain word also finds it by: their text (once any
    file has text), their names (once any file exists). False as a whole when neither."""

    text: bool = False
    names: bool = False

    def __bool__(self) -> bool:
        return self.text or self.names


def file_words_of(value: bool | FileWords) -> FileWords:
    """`True` as callers before file names meant it: the files' text alone."""
    return value if isinstance(value, FileWords) else FileWords(text=value)


@dataclass
class Plan:
    """A query split for a windowed search: index MATCHes whose union holds every match
    (candidates come from them newest rowid first), the filters an index can narrow the
    scan with, and what else a candidate must satisfy (SQL over `m`)."""

    words: str | None = None  # words-index MATCH, scored by bm25
    stems: str | None = None  # stems-index MATCH: the candidates matched by stem
    stems_also: str | None = None  # words-index MATCH stem candidates must also satisfy
    trigram: str | None = None  # trigram MATCH (unscored), when the query has no words
    # The same words in the files' text (attachment_words) and stems (attachment_stems):
    # a message one of whose files holds them is a candidate too, ranked after the others.
    files: str | None = None
    file_stems: str | None = None
    # The same words in one of its files' names (attachment_names), ranked between a voice
    # note's transcript and other files' text.
    names: str | None = None
    scope: str = ""  # index-driven filters over m ("" when none)
    scope_params: list[str] = field(default_factory=list)
    rest: str = "1"  # everything else, over m
    rest_params: list[str] = field(default_factory=list)


def compile_query(
    node: Node | None,
    now: datetime | None = None,
    analyzer: Analyzer | None = None,
    senders: Senders | None = None,
    file_analyzer: Analyzer | None = None,
    file_words: bool | FileWords = False,
) -> Compiled:
    """SQL for `node` (None: every message). With an analyzer, a word (not `exact:`) also
    matches its stems in the stems index. `senders`: the identity ids each `from:` was
    resolved to already (senders.py), used as they are instead of resolving again.
    `file_analyzer`: the files' stems index's, when it may be read (`content:`).
    `file_words`: a word also matches the text, or the names, of a message's files (the
    archive has some)."""
    file_words = file_words_of(file_words)
    compiler = _Compiler(now or datetime.now(UTC), analyzer, senders, file_analyzer, file_words)
    if node is None:
        return Compiled("1", [])
    where = compiler.node(node)
    return Compiled(
        where,
        compiler.params,
        rank_match=_rank_match(node),
        highlights=compiler.highlights,
        include_deleted=_asks_for_deleted(node),
        plan=_with_files(
            _plan(node, compiler.now, analyzer, senders, file_analyzer, file_words),
            file_analyzer,
            file_words,
        ),
    )


def _asks_for_deleted(node: Node) -> bool:
    if isinstance(node, Filter):
        return node.name == "is" and node.value == "deleted" and not node.negated
    if isinstance(node, Group):
        return not node.negated and any(_asks_for_deleted(item) for item in node.items)
    return False


def _word_match(term: Term) -> str | None:
    if term.negated or term.kind not in ("word", "phrase", "prefix"):
        return None
    return fts_string(term.text) + ("*" if term.kind == "prefix" else "")


def _rank_match(node: Node) -> str | None:
    """What bm25 ranks by: the positive words of a top-level AND, or of a word-only OR."""
    if isinstance(node, Term):
        return _word_match(node)
    if isinstance(node, Group) and not node.negated:
        parts = [_word_match(item) if isinstance(item, Term) else None for item in node.items]
        if node.op == "and":
            found = [part for part in parts if part]
            return " AND ".join(found) if found else None
        if all(parts):
            return " OR ".join(part for part in parts if part)
    return None


_WORD_KINDS = ("word", "phrase", "prefix")
# Filters an index answers (sender, chat, account, time): a narrow one can bound the scan.
_SCOPE_FILTERS = ("from", "chat", "source", "before", "after", "on")


def _stem_alternatives(term: Term, analyzer: Analyzer | None) -> str | None:
    """`"stem1" OR "stem2"` for a plain word the analyzer stems, else None."""
    if term.kind != "word" or term.exact or analyzer is None:
        return None
    stems = analyzer.word_stems(term.text)
    return " OR ".join(fts_string(stem) for stem in stems) if stems else None


def _is_gram(node: Node) -> TypeGuard[Term]:
    return (
        isinstance(node, Term)
        and not node.negated
        and node.kind in ("infix", "substring")
        and len(node.text) >= 3
    )


def _plan(
    node: Node,
    now: datetime,
    analyzer: Analyzer | None,
    senders: Senders | None = None,
    file_analyzer: Analyzer | None = None,
    file_words: FileWords = FileWords(),
) -> Plan | None:
    """The windowed form of `node`, when its shape has one: a positive AND whose parts
    include words (or, lacking words, trigram terms), or a positive OR of words only.

    Why the union is complete: a stemmed message holds the stem of every word it holds, so
    for words the stems index alone finds every match; the words index adds exact hits
    (and ranks them) and covers messages the stems queue has not reached yet."""
    if node.negated:
        return None
    if isinstance(node, Group) and node.op == "or":
        items = node.items
        if all(
            isinstance(item, Term) and not item.negated and item.kind in _WORD_KINDS
            for item in items
        ):
            terms = [item for item in items if isinstance(item, Term)]
            stems = [_stem_alternatives(term, analyzer) for term in terms]
            return Plan(
                words=" OR ".join(str(_word_match(term)) for term in terms),
                stems=" OR ".join(f"({alt})" for alt in stems if alt) or None,
            )
        if all(_is_gram(item) for item in items):
            return Plan(
                trigram=" OR ".join(fts_string(item.text) for item in items if _is_gram(item))
            )
        return None
    items = node.items if isinstance(node, Group) else (node,)
    words = [
        item
        for item in items
        if isinstance(item, Term) and not item.negated and item.kind in _WORD_KINDS
    ]
    grams = [item for item in items if _is_gram(item)] if not words else []
    if not words and not grams:
        return None
    scope = [
        item
        for item in items
        if isinstance(item, Filter)
        and not item.negated
        and item.name in _SCOPE_FILTERS
        and not (item.name == "from" and item.value.lower() in ("me", "myself"))
    ]
    rest = [item for item in items if item not in words and item not in grams and item not in scope]
    plan = Plan()
    if words:
        plan.words = " AND ".join(str(_word_match(term)) for term in words)
        alternatives = {term: _stem_alternatives(term, analyzer) for term in words}
        stemmed = [f"({alt})" for alt in alternatives.values() if alt]
        if stemmed:
            plan.stems = " AND ".join(stemmed)
            unstemmed = [str(_word_match(term)) for term, alt in alternatives.items() if not alt]
            plan.stems_also = " AND ".join(unstemmed) or None
    else:
        plan.trigram = " AND ".join(fts_string(term.text) for term in grams)
    if scope:
        compiler = _Compiler(now, analyzer, senders, file_analyzer, file_words)
        plan.scope = " AND ".join(compiler.node(item) for item in scope)
        plan.scope_params = compiler.params
    if rest:
        compiler = _Compiler(now, analyzer, senders, file_analyzer, file_words)
        plan.rest = " AND ".join(compiler.node(item) for item in rest)
        plan.rest_params = compiler.params
    return plan


def _with_files(
    plan: Plan | None, file_analyzer: Analyzer | None, file_words: FileWords
) -> Plan | None:
    """The plan whose words also find messages by their files' text and names, when asked:
    the same MATCH over the files' words (and stems: the same analyzer makes both indexes)
    and over their names' words."""
    if plan is None or plan.words is None:
        return plan
    if file_words.text:
        plan.files = plan.words
        if file_analyzer is not None and plan.stems_also is None:
            plan.file_stems = plan.stems
    if file_words.names:
        plan.names = plan.words
    return plan


class _Compiler:
    def __init__(
        self,
        now: datetime,
        analyzer: Analyzer | None,
        senders: Senders | None = None,
        file_analyzer: Analyzer | None = None,
        file_words: FileWords = FileWords(),
    ) -> None:
        self.now = now
        self.analyzer = analyzer
        self.file_analyzer = file_analyzer
        self.file_words = file_words
        self.senders = senders or {}
        self.params: list[str] = []
        self.highlights: list[str] = []

    def node(self, node: Node) -> str:
        if isinstance(node, Group):
            joiner = " AND " if node.op == "and" else " OR "
            sql = "(" + joiner.join(self.node(item) for item in node.items) + ")"
        elif isinstance(node, Term):
            sql = self.term(node)
        else:
            sql = self.filter(node)
        return f"NOT {sql}" if node.negated else sql

    def term(self, term: Term) -> str:
        if not term.negated:
            self.highlights.append(_highlight(term))
        if term.kind in ("word", "phrase", "prefix"):
            match = fts_string(term.text) + ("*" if term.kind == "prefix" else "")
            self.params.append(match)
            words = "m.id IN (SELECT rowid FROM message_fts WHERE message_fts MATCH %s)"
            stems = self.analyzer.word_stems(term.text) if self.analyzer else ()
            if term.kind != "word" or term.exact or not stems:
                return self.in_files(term, words)
            self.params.append(" OR ".join(fts_string(stem) for stem in stems))
            if not term.negated:
                self.highlights.extend(
                    rf"\b{re.escape(stem)}\w*" for stem in stems if stem != term.text.lower()
                )
            return self.in_files(
                term,
                f"({words} OR m.id IN (SELECT rowid FROM message_stems"
                " WHERE message_stems MATCH %s))",
            )
        # infix and substring: the trigram index needs three characters
        if len(term.text) >= 3:
            self.params.append(fts_string(term.text))
            return "m.id IN (SELECT rowid FROM message_trigram WHERE message_trigram MATCH %s)"
        self.params.append(like_pattern(term.text))
        return "(m.text LIKE %s ESCAPE '\\')"

    def filter(self, node: Filter) -> str:
        value = node.value
        if node.name == "from":
            if value.lower() in ("me", "myself"):
                return "(m.direction = 'out')"
            # The identities it names first (senders.py: words of names, handles and
            # addresses, from small tables), then the messages by the sender index.
            resolved = self.senders.get((value, node.exact))
            if resolved is not None:  # integers, inlined: no text reaches the SQL
                return f"(m.sender_id IN ({','.join(str(int(i)) for i in resolved)}))"
            senders, senders_params = sender_ids_sql(value, exact=node.exact)
            self.params.extend(senders_params)
            return f"(m.sender_id IN ({senders}))"
        if node.name == "chat":
            self.params.extend([like_pattern(value), value])
            return (
                "(m.chat_id IN (SELECT c.id FROM archive_chat AS c WHERE"
                " c.title LIKE %s ESCAPE '\\' OR c.external_id = %s))"
            )
        if node.name == "source":
            self.params.append(value)
            return "(m.account_id IN (SELECT a.id FROM archive_account AS a WHERE a.provider = %s))"
        if node.name in ("before", "after", "on"):
            start, end = self.day_range(value)
            if node.name == "before":
                self.params.append(db_time(start))
                return "(m.sent_at < %s)"
            if node.name == "after":
                self.params.append(db_time(start))
                return "(m.sent_at >= %s)"
            self.params.extend([db_time(start), db_time(end)])
            return "(m.sent_at >= %s AND m.sent_at < %s)"
        if node.name == "has":
            return _HAS[value]
        if node.name == "is":
            return _IS[value]
        if node.name in FILE_TEXT_FIELDS:
            return self.file_text(node)
        if node.name == "tag":
            # On the message, on its chat, or on its sender's person: three probes of the
            # taggings' (tag, kind, target) index for one tag id.
            self.params.extend([value, value, value])
            tag = "(SELECT t.id FROM archive_tag AS t WHERE lower(t.name) = lower(%s))"
            tagged = (
                "SELECT g.target_id FROM archive_tagging AS g"
                " WHERE g.tag_id = {} AND g.target_kind = '{}'"
            )
            return (
                f"(m.id IN ({tagged.format(tag, 'message')})"
                f" OR m.chat_id IN ({tagged.format(tag, 'chat')})"
                " OR m.sender_id IN (SELECT i.id FROM archive_identity AS i WHERE i.person_id IN"
                f" ({tagged.format(tag, 'person')})))"
            )
        if node.name == "conv":
            # The messages of the conversation its first message is in now: that message's
            # link in its chat's current build names the conversation, whose links are the
            # set (the links' (conversation, message) index). No build: nothing.
            self.params.append(root_public_id(value) or "")
            return (
                "(m.id IN (SELECT l.message_id FROM archive_conversationlink AS l"
                " JOIN archive_conversationstate AS s ON s.current_id = l.build_id"
                " WHERE l.conversation_id = (SELECT r.conversation_id"
                " FROM archive_message AS root"
                " JOIN archive_conversationstate AS rs ON rs.chat_id = root.chat_id"
                " JOIN archive_conversationlink AS r"
                "   ON r.message_id = root.id AND r.build_id = rs.current_id"
                " WHERE root.public_id = %s)))"
            )
        # filename
        self.params.append(like_pattern(value))
        return (
            "EXISTS (SELECT 1 FROM archive_attachment AS f WHERE f.message_id = m.id"
            " AND f.file_name LIKE %s ESCAPE '\\')"
        )

    def in_files(self, term: Term, sql: str) -> str:
        """`sql` (the messages whose text holds the term) or, when words also match files'
        text or names, the messages one of whose files holds it."""
        found = [sql]
        if self.file_words.text:
            content = Filter("content", term.text, exact=term.kind == "phrase")
            found.append(self.file_text(content, term))
        if self.file_words.names:
            self.params.append(fts_string(term.text) + ("*" if term.kind == "prefix" else ""))
            found.append(f"(m.id IN ({NAMED_SQL}))")
        return sql if len(found) == 1 else f"({' OR '.join(found)})"

    def file_text(self, node: Filter, term: Term | None = None) -> str:
        """The messages with a file whose text holds the words (`transcript:`: a voice
        note's transcript): the files' words index, and for a plain word its stems."""
        if term is None:
            term = file_term(node)
            if not node.negated:
                self.highlights.append(_highlight(term))
        self.params.append(fts_string(term.text) + ("*" if term.kind == "prefix" else ""))
        attachments = "SELECT rowid FROM attachment_words WHERE attachment_words MATCH %s"
        stems = _stem_alternatives(term, self.file_analyzer)
        if stems:
            self.params.append(stems)
            attachments += (
                " UNION SELECT rowid FROM attachment_stems WHERE attachment_stems MATCH %s"
            )
        only = _SPEECH if node.name == "transcript" else ""
        return (
            "(m.id IN (SELECT f.message_id FROM archive_attachment AS f"
            f" WHERE f.id IN ({attachments}){only}))"
        )

    def day_range(self, value: str) -> tuple[datetime, datetime]:
        """[start, end) in UTC of a date value the parser accepted."""
        today = self.now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        if value == "today":
            return today, today + timedelta(days=1)
        if value == "yesterday":
            return today - timedelta(days=1), today
        age = _AGE.match(value)
        if age:
            count, unit = int(age.group(1)), age.group(2)
            start = _minus(self.now, count, unit)
            return start, start + timedelta(days=1)
        parts = [int(part) for part in value.split("-")]
        try:
            if len(parts) == 1:
                return datetime(parts[0], 1, 1, tzinfo=UTC), datetime(
                    parts[0] + 1, 1, 1, tzinfo=UTC
                )
            if len(parts) == 2:
                year, month = parts
                last = calendar.monthrange(year, month)[1]
                start = datetime(year, month, 1, tzinfo=UTC)
                return start, start + timedelta(days=last)
            start = datetime(parts[0], parts[1], parts[2], tzinfo=UTC)
            return start, start + timedelta(days=1)
        except (ValueError, OverflowError, calendar.IllegalMonthError):
            # A well-formed but impossible date (2024-02-31): an empty range, not an error.
            return self.now, self.now


def _highlight(term: Term) -> str:
    """A regular expression marking what the term matched in a snippet."""
    if term.kind == "word":
        return rf"\b{re.escape(term.text)}\b"
    if term.kind == "prefix":
        return rf"\b{re.escape(term.text)}\w*"
    if term.kind == "phrase":
        return r"\b" + r"\W+".join(re.escape(word) for word in term.text.split()) + r"\b"
    return re.escape(term.text)


def file_term(node: Filter) -> Term:
    """The term a `content:` or `transcript:` value is: a quoted value a phrase as written,
    `word*` a prefix, a word a word (and its stems), anything else the phrase of its words."""
    value = " ".join(node.value.split())
    if node.exact:
        return Term("phrase", value, exact=True)
    if value.endswith("*") and WORD.match(value.rstrip("*")):
        return Term("prefix", value.rstrip("*"))
    if WORD.match(value):
        return Term("word", value)
    return Term("phrase", value.strip("*"))


def _minus(now: datetime, count: int, unit: str) -> datetime:
    days = {"d": 1, "w": 7, "m": 30, "y": 365}[unit] * count
    try:
        return now - timedelta(days=days)
    except OverflowError:
        return datetime(1, 1, 1, tzinfo=UTC)


_ATTACHMENT = "EXISTS (SELECT 1 FROM archive_attachment AS f WHERE f.message_id = m.id{})"
_HAS = {
    "attachment": _ATTACHMENT.format(""),
    "file": _ATTACHMENT.format(
        " AND f.mime_type NOT LIKE 'image/%%' AND f.mime_type NOT LIKE 'audio/%%'"
        " AND f.mime_type NOT LIKE 'video/%%'"
    ),
    "image": _ATTACHMENT.format(" AND f.mime_type LIKE 'image/%%'"),
    "voice": _ATTACHMENT.format(" AND f.mime_type LIKE 'audio/%%'"),
    "link": (
        "m.id IN (SELECT rowid FROM message_trigram WHERE message_trigram MATCH"
        ' \'"http://" OR "https://" OR "www."\')'
    ),
}
# The messages one of whose files' names holds a words-index MATCH (bound once).
NAMED_SQL = (
    "SELECT f.message_id FROM archive_attachment AS f WHERE f.id IN"
    " (SELECT rowid FROM attachment_names WHERE attachment_names MATCH %s)"
)
# A voice note's transcript: its text row was written by a speech reader (`speech:…`).
_SPEECH = (
    " AND EXISTS (SELECT 1 FROM archive_attachmenttext AS t WHERE t.attachment_id = f.id"
    " AND t.extractor LIKE 'speech:%%')"
)
# Messages with a file whose text row is in a state (the text rows' state index).
_TEXT_STATE = (
    "(m.id IN (SELECT f.message_id FROM archive_attachmenttext AS t CROSS JOIN"
    " archive_attachment AS f ON f.id = t.attachment_id WHERE t.state = '{}'))"
)
_HAS["text"] = _TEXT_STATE.format("done")
_IS = {
    "dm": "(m.chat_id IN (SELECT c.id FROM archive_chat AS c WHERE c.kind = 'dm'))",
    "group": (
        "(m.chat_id IN (SELECT c.id FROM archive_chat AS c WHERE c.kind IN ('group', 'thread')))"
    ),
    "channel": "(m.chat_id IN (SELECT c.id FROM archive_chat AS c WHERE c.kind = 'channel'))",
    "reply": "(m.reply_to_external_id != '')",
    "edited": "(m.edited_at IS NOT NULL)",
    "deleted": "(m.deleted_at IS NOT NULL)",
    "mine": "(m.direction = 'out')",
    # The export gave no usable date: the time shown is the best evidence there was.
    "estimated": "(m.date_estimated)",
    # A scan, an image or a voice note no reader could give text (an agent may).
    "needs_text": _TEXT_STATE.format("needs_text"),
}
