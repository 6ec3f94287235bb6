"""Search benchmark: 200 mixed queries over a million messages of real chat text, through
the search service and through the page's htmx fragment, against raw FTS5 MATCH for the
same terms in the same run.

    python bench/search_bench.py [--messages 1000000] [--keep DIR] [--store DIR] [--files 50]

Without `--store` it builds the Telegram export of `import_bench.py` (real lines of
../shared/corpora/ubuntu-irc) and imports it with `wirecat import`; `--store DIR` reuses a
state folder that already holds such an import (it is migrated first). The stems index and
the typo vocabulary are then brought up to date, untimed. With `--files N` (50 by default;
0 for none) one message in N gets a file whose text is three other messages' lines as three
pages (one file in five a voice note's transcript), written once per store, untimed; the
queries then include `content:` ones, and every word is looked for in files' text too.
Prints p50/p95/p99 of the service
call (`message_search`), of the fragment (`GET /search/` with `HX-Request` through Django's
test client, owner signed in) and of raw MATCH, and the service-to-raw ratio.
Targets: service p95 <= 50 ms, fragment p95 <= 100 ms, service <= 3x raw.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

QUERIES_PER_KIND = 20
RUNS = 3  # each query is timed this many times; the median run counts


def wirecat(args: list[str], state: Path) -> None:
    env = {**os.environ, "WIRECAT_STATE_DIR": str(state)}
    subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT, env=env, check=True)


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)

    def at(share: float) -> float:
        return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]

    return at(0.50) * 1000, at(0.95) * 1000, at(0.99) * 1000


def timed(call: Any) -> float:
    runs = []
    for _ in range(RUNS):
        started = time.perf_counter()
        call()
        runs.append(time.perf_counter() - started)
    return statistics.median(runs)


def add_files(cursor: Any, every: int) -> int:
    """Give one message in `every` a file with text (three other messages' lines, a page
    each; one in five a voice note's transcript), once per store; how many files have
    text. Written by SQL (the triggers index the text), as the files' readers would."""
    cursor.execute("SELECT count(*) FROM archive_attachmenttext WHERE extractor LIKE 'bench%'")
    if cursor.fetchone()[0] == 0 and every > 0:
        cursor.execute(
            "INSERT INTO archive_attachment (public_id, message_id, external_id, file_name,"
            " mime_type, size, sha256, path, provider_metadata, created_at)"
            " SELECT 'att_bench' || m.id, m.id, 'bench', 'report-' || m.id ||"
            " CASE WHEN m.id % 5 = 0 THEN '.ogg' ELSE '.pdf' END,"
            " CASE WHEN m.id % 5 = 0 THEN 'audio/ogg' ELSE 'application/pdf' END,"
            " 1000, '', NULL, '{}', m.sent_at FROM archive_message AS m"
            f" WHERE m.id % {every} = 0"
        )
        cursor.execute(
            "INSERT INTO archive_attachmenttext (attachment_id, text, state, reason, origin,"
            " extractor, model, sha256, pages, made_at)"
            " SELECT f.id, coalesce((SELECT text FROM archive_message WHERE id = f.message_id - 7),"
            " '') || char(12) || coalesce((SELECT text FROM archive_message"
            " WHERE id = f.message_id - 13), '') || char(12) || coalesce((SELECT text"
            " FROM archive_message WHERE id = f.message_id - 29), ''), 'done', '', 'extracted',"
            " CASE WHEN f.mime_type = 'audio/ogg' THEN 'bench-speech' ELSE 'bench-pdf' END,"
            " '', '', 3, f.created_at FROM archive_attachment AS f WHERE f.external_id = 'bench'"
        )
    cursor.execute("SELECT count(*) FROM archive_attachmenttext WHERE state = 'done'")
    return int(cursor.fetchone()[0])


def make_queries(cursor: Any, rng: random.Random) -> list[tuple[str, str, str, list[Any]]]:
    """(kind, query, raw SQL, raw params): the same terms the query asks for."""
    cursor.execute(
        "SELECT term, doc FROM message_fts_vocab WHERE length(term) BETWEEN 4 AND 12"
        " AND term GLOB '[a-z]*' AND term NOT GLOB '*[^a-z]*'"
    )
    vocab = cursor.fetchall()
    common = [t for t, d in sorted(vocab, key=lambda v: -v[1])[:400]]
    rare = [t for t, d in vocab if 3 <= d <= 30]
    cursor.execute(
        "SELECT i.id, i.display_name FROM archive_identity AS i WHERE i.display_name != ''"
        " AND i.display_name NOT GLOB '*[^A-Za-z0-9_]*' ORDER BY i.id LIMIT 500"
    )
    senders = cursor.fetchall()
    cursor.execute("SELECT id, title FROM archive_chat ORDER BY id")
    chats = cursor.fetchall()
    cursor.execute("SELECT text FROM archive_message WHERE id % 997 = 0 AND length(text) > 30")
    texts = [row[0] for row in cursor.fetchall()]
    words_fts = "SELECT rowid FROM message_fts WHERE message_fts MATCH %s ORDER BY rank LIMIT 21"
    filtered = (
        "SELECT m.id FROM message_fts AS f JOIN archive_message AS m ON m.id = f.rowid"
        " WHERE message_fts MATCH %s AND {} ORDER BY f.rank LIMIT 21"
    )
    out: list[tuple[str, str, str, list[Any]]] = []
    for _ in range(QUERIES_PER_KIND):
        a, b = rng.choice(common), rng.choice(common)
        r = rng.choice(rare)
        out.append(("one common word", a, words_fts, [f'"{a}"']))
        out.append(("one rare word", r, words_fts, [f'"{r}"']))
        out.append(("two words", f"{a} {r}", words_fts, [f'"{a}" AND "{r}"']))
        sample = rng.choice(texts)
        pair = re.findall(r"[a-z]{3,}", sample.lower())
        phrase = " ".join(pair[:2]) if len(pair) >= 2 else a
        out.append(("phrase", f'"{phrase}"', words_fts, [f'"{phrase}"']))
        out.append(("prefix", f"{b[:4]}*", words_fts, [f'"{b[:4]}"*']))
        middle = b[1:5] if len(b) >= 6 else b[:4]
        out.append(
            (
                "infix",
                f"*{middle}*",
                "SELECT rowid FROM message_trigram WHERE message_trigram MATCH %s LIMIT 21",
                [f'"{middle}"'],
            )
        )
        sender_id, nick = rng.choice(senders)
        out.append(
            (
                "word from:",
                f"{a} from:{nick}",
                filtered.format("m.sender_id = %s"),
                [f'"{a}"', sender_id],
            )
        )
        chat_id, title = rng.choice(chats)
        out.append(
            (
                "word in:",
                f'{a} in:"{title}"',
                filtered.format("m.chat_id = %s"),
                [f'"{a}"', chat_id],
            )
        )
        year = rng.randint(2004, 2009)
        out.append(
            (
                "word after:",
                f"{r} after:{year}-06-01",
                filtered.format("m.sent_at >= %s"),
                [f'"{r}"', f"{year}-06-01 00:00:00"],
            )
        )
        out.append(("two words OR", f"{a} OR {b}", words_fts, [f'"{a}" OR "{b}"']))
    cursor.execute("SELECT EXISTS (SELECT 1 FROM archive_attachmenttext WHERE state = 'done')")
    if not cursor.fetchone()[0]:
        return out
    cursor.execute(
        "SELECT term, doc FROM attachment_words_vocab WHERE length(term) BETWEEN 4 AND 12"
        " AND term GLOB '[a-z]*' AND term NOT GLOB '*[^a-z]*'"
    )
    file_vocab = cursor.fetchall()
    file_common = [t for t, d in sorted(file_vocab, key=lambda v: -v[1])[:400]]
    file_rare = [t for t, d in file_vocab if 2 <= d <= 30] or file_common
    files_fts = (
        "SELECT f.message_id FROM attachment_words AS w JOIN archive_attachment AS f"
        " ON f.id = w.rowid WHERE attachment_words MATCH %s LIMIT 21"
    )
    for _ in range(QUERIES_PER_KIND):
        c, r = rng.choice(file_common), rng.choice(file_rare)
        out.append(("content: common", f"content:{c}", files_fts, [f'"{c}"']))
        out.append(("content: rare", f"content:{r}", files_fts, [f'"{r}"']))
        out.append(("word content:", f"{rng.choice(common)} content:{c}", files_fts, [f'"{c}"']))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, help="folder for the export and store (kept)")
    parser.add_argument("--store", type=Path, help="a state folder that already holds the import")
    parser.add_argument(
        "--files", type=int, default=50, help="one message in N gets a file with text (0: none)"
    )
    args = parser.parse_args()
    if args.store:
        state = args.store
        wirecat(["migrate", "-v0"], state)
    else:
        from make_telegram_export import write as write_export

        work = args.keep or Path(tempfile.mkdtemp(prefix="wirecat-search-bench-"))
        work.mkdir(parents=True, exist_ok=True)
        export = work / f"result-{args.messages}.json"
        if not export.exists():
            write_export(export, args.messages)
        state = work / "search-state"
        wirecat(["migrate", "-v0"], state)
        wirecat(["import", str(export)], state)

    os.environ["WIRECAT_STATE_DIR"] = str(state)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "wirecat.settings")
    os.environ["WIRECAT_ALLOWED_HOSTS"] = "testserver"
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    from archive.search.selectors import message_search
    from archive.search.services.index import stems_drain, vocabulary_refresh

    started = time.perf_counter()
    drained = stems_drain()
    terms = vocabulary_refresh(force=True)
    with connection.cursor() as cursor:
        with_text = add_files(cursor, args.files)
    from archive.files.search_index import file_stems_drain

    file_stems = file_stems_drain()
    print(
        f"index: {drained.indexed:,} messages stemmed, {terms:,} vocabulary terms, "
        f"{with_text:,} files with text ({file_stems.indexed:,} stemmed) "
        f"in {time.perf_counter() - started:,.0f} s (untimed)"
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM archive_message")
        total = cursor.fetchone()[0]
        queries = make_queries(cursor, random.Random(20261129))  # noqa: S311 - a fixed sample
    user_model = get_user_model()
    owner = user_model.objects.filter(
        is_superuser=True
    ).first() or user_model.objects.create_superuser("bench-owner", password=None)
    client = Client()
    client.force_login(owner)

    service: list[float] = []
    fragment: list[float] = []
    raw: list[float] = []
    by_kind: dict[str, list[float]] = {}
    for kind, query, raw_sql, raw_params in queries:

        def raw_call(sql: str = raw_sql, params: list[Any] = raw_params) -> None:
            with connection.cursor() as cursor:
                cursor.execute(sql, params)
                cursor.fetchall()

        def service_call(q: str = query) -> None:
            message_search(query=q)

        def fragment_call(q: str = query) -> None:
            response = client.get("/search/", {"q": q}, HTTP_HX_REQUEST="true", HTTP_HX_TRIGGER="q")
            assert response.status_code == 200, response.status_code

        raw.append(timed(raw_call))
        spent = timed(service_call)
        service.append(spent)
        by_kind.setdefault(kind, []).append(spent)
        fragment.append(timed(fragment_call))

    print(f"{len(queries)} queries over {total:,} messages, each the median of {RUNS} runs")
    for label, samples in (("service", service), ("fragment", fragment), ("raw MATCH", raw)):
        p50, p95, p99 = percentiles(samples)
        print(f"{label:>10}: p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  p99 {p99:6.1f} ms")
    for kind, samples in by_kind.items():
        p50, p95, _ = percentiles(samples)
        print(f"    service, {kind:>16}: p50 {p50:6.1f} ms  p95 {p95:6.1f} ms")
    ratio = percentiles(service)[1] / max(percentiles(raw)[1], 1e-9)
    print(
        f"ratio: service p95 / raw p95 = {ratio:.2f} (target <= 3); "
        f"targets: service p95 <= 50 ms, fragment p95 <= 100 ms"
    )


if __name__ == "__main__":
    main()
