"""Meetings benchmark: calendars and transcripts imported through the readers and services
an import uses, and transcript search, each against the plainest SQLite doing the same job
in the same run.

    python bench/meetings_bench.py [--events 10000] [--hours 500] [--queries 300]
                                   [--keep DIR] [--quick]
    python bench/meetings_bench.py --search-only DIR [--queries 300]

`--search-only DIR` runs only the search phase against the stores a `--keep DIR` run left
(DIR/state and DIR/baseline.db; migrated first, nothing imported): the same seed, so the
same queries.

Input is made in the run (seeded, so every run reads the same files): `--events` VEVENTs
as .ics files of 1,000 events each (single events, weekly and daily series ending by COUNT
or UNTIL, moved and cancelled overrides, attendees; UTC and Europe/Berlin times, CRLF,
folded lines), and `--hours` of WebVTT transcripts, one file per one-hour meeting with a
cue every 3-5 s and `<v Name>` voice tags. The words are real: lines of
../shared/corpora/ubuntu-irc (Kummerfeld et al., ACL 2019, CC-BY-4.0), the nicks as
speakers and attendees. Transcripts are named like Zoom's cloud recordings
(`GMT20240105-150012_…`) at the start of a one-hour calendar event, so each one finds its
meeting as an imported one would.

Our path (timed): for each file, `meeting_reader_for(path).read(...)` then `calendar_store`
or `transcript_store` as archive/imports/meetings.py calls them, then `meeting_stems_drain`
until the stems queue is empty. Prints events/s, occurrences/s, segments/s, the seconds of
each phase and peak RSS (of this process, taken before the baseline runs).

Baseline (same process): the same segments with `executemany` into a plain table, then FTS5
`rebuild` of a words index over it. Search: `--queries` queries (common, mid and rare single
words, two words, phrases, a word with `from:`) through `meeting_search`, each the median
of 3 runs, against raw `SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT 20` of
the same terms on the plain table. Target: meeting_search p95 <= 50 ms.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import sqlean
from measure import RUNS, peak_rss_mb, percentiles, term_tiers, timed

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CORPUS = ROOT.parent / "shared" / "corpora" / "ubuntu-irc" / "train"
LINE = re.compile(r"^\[\d\d:\d\d\] <([^>]+)> (.+)$")
SEED = 20261201
BERLIN = ZoneInfo("Europe/Berlin")
EVENTS_PER_FILE = 1_000
KINDS = ("common word", "mid word", "rare word", "two words", "phrase", "word from:")


# --- input ------------------------------------------------------------------------------


def corpus() -> tuple[list[str], list[str]]:
    """(lines of real chat text with at least three words, the nicks who wrote them)."""
    lines: list[str] = []
    nicks: set[str] = set()
    for raw in sorted(CORPUS.glob("*.raw.txt")):
        for line in raw.read_text(errors="replace").splitlines():
            found = LINE.match(line)
            if found is None:
                continue
            nick, text = found.groups()
            text = " ".join(text.split())
            if len(text.split()) >= 3 and "-->" not in text:
                lines.append(text)
                if re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{2,20}", nick):
                    nicks.add(nick)
    return lines, sorted(nicks)


def _fold(line: str) -> str:
    """An iCalendar content line folded at 74 characters (CRLF and a space)."""
    parts = [line[i : i + 74] for i in range(0, len(line), 74)] or [""]
    return "\r\n ".join(parts)


def _ics_text(value: str) -> str:
    return value.replace("\\", "\\\\").replace(";", "\\;").replace(",", "\\,")


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y%m%dT%H%M%SZ")


def transcript_starts(hours: int, now: datetime) -> list[datetime]:
    """When each one-hour transcribed meeting began: weekdays in the past two years."""
    rng = random.Random(SEED + 1)  # noqa: S311 - a fixed sample, not a secret
    starts: set[datetime] = set()
    while len(starts) < hours:
        day = (now - timedelta(days=rng.randint(7, 730))).replace(
            hour=rng.randint(7, 17), minute=rng.choice((0, 30)), second=0, microsecond=0
        )
        if day.weekday() < 5:
            starts.add(day)
    return sorted(starts)


def write_calendars(
    folder: Path, events: int, starts: list[datetime], lines: list[str], nicks: list[str]
) -> list[Path]:
    """`events` VEVENTs (overrides not counted) in files of EVENTS_PER_FILE; the first ones
    are the one-hour meetings the transcripts begin at."""
    rng = random.Random(SEED)  # noqa: S311
    now = datetime.now(UTC).replace(microsecond=0)
    files: list[Path] = []
    for first in range(0, events, EVENTS_PER_FILE):
        out = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//WireCat//meetings bench//EN"]
        out.append(f"X-WR-CALNAME:Team calendar {first // EVENTS_PER_FILE + 1}")
        for number in range(first, min(events, first + EVENTS_PER_FILE)):
            uid = f"bench-{number}@wirecat.test"
            if number < len(starts):
                start, minutes, kind = starts[number], 60, "single"
            else:
                start = (now - timedelta(days=rng.randint(0, 4 * 365))).replace(
                    hour=rng.randint(6, 19), minute=rng.choice((0, 15, 30, 45)), second=0
                )
                start += timedelta(days=rng.randint(0, 365)) if rng.random() < 0.2 else timedelta()
                minutes = rng.choice((15, 30, 30, 45, 60, 60, 90))
                kind = rng.choices(
                    ("single", "weekly count", "weekly until", "daily count", "daily until"),
                    weights=(60, 20, 8, 8, 4),
                )[0]
            end = start + timedelta(minutes=minutes)
            berlin = rng.random() < 0.3
            title = " ".join(rng.choice(lines).split()[:8])
            head = [
                "BEGIN:VEVENT",
                f"UID:{uid}",
                f"DTSTAMP:{_stamp(now)}",
                f"SUMMARY:{_ics_text(title)}",
                f"DESCRIPTION:{_ics_text(' '.join(rng.sample(lines, 2)))}",
                f"LOCATION:Room {rng.randint(1, 40)}",
                "SEQUENCE:0",
            ]
            if berlin:
                local = start.astimezone(BERLIN).replace(tzinfo=None)
                fmt = "%Y%m%dT%H%M%S"
                head.append(f"DTSTART;TZID=Europe/Berlin:{local.strftime(fmt)}")
                head.append(f"DTEND;TZID=Europe/Berlin:{(local + (end - start)).strftime(fmt)}")
            else:
                head += [f"DTSTART:{_stamp(start)}", f"DTEND:{_stamp(end)}"]
            people = rng.sample(nicks, rng.randint(1, 6))
            head.append(f"ORGANIZER;CN={people[0]}:mailto:{people[0].lower()}@example.org")
            for nick in people[1:]:
                status = rng.choice(("ACCEPTED", "DECLINED", "TENTATIVE", "NEEDS-ACTION"))
                head.append(
                    f"ATTENDEE;CN={nick};ROLE=REQ-PARTICIPANT;PARTSTAT={status}"
                    f":mailto:{nick.lower()}@example.org"
                )
            step = timedelta(days=7 if kind.startswith("weekly") else 1)
            count = rng.randint(4, 26) if kind.startswith("weekly") else rng.randint(3, 15)
            if kind.endswith("count"):
                head.append(f"RRULE:FREQ={'WEEKLY' if step.days == 7 else 'DAILY'};COUNT={count}")
            elif kind.endswith("until"):
                until = _stamp(start + step * (count - 1) + timedelta(hours=1))
                head.append(f"RRULE:FREQ={'WEEKLY' if step.days == 7 else 'DAILY'};UNTIL={until}")
            head.append("END:VEVENT")
            overrides: list[str] = []
            if kind != "single" and rng.random() < 0.3 and not berlin:
                for _ in range(rng.randint(1, 2)):
                    which = start + step * rng.randint(1, count - 1)
                    cancelled = rng.random() < 0.4
                    moved = which + timedelta(hours=rng.choice((-2, -1, 1, 3)))
                    overrides += [
                        "BEGIN:VEVENT",
                        f"UID:{uid}",
                        f"DTSTAMP:{_stamp(now)}",
                        f"RECURRENCE-ID:{_stamp(which)}",
                        f"SUMMARY:{_ics_text(title)}",
                        "SEQUENCE:1",
                        f"DTSTART:{_stamp(which if cancelled else moved)}",
                        f"DTEND:{_stamp((which if cancelled else moved) + (end - start))}",
                        *(["STATUS:CANCELLED"] if cancelled else []),
                        "END:VEVENT",
                    ]
            # Overrides before their master now and then, as some servers write them.
            out += (overrides + head) if rng.random() < 0.5 else (head + overrides)
        out.append("END:VCALENDAR")
        path = folder / f"calendar-{first // EVENTS_PER_FILE + 1:02}.ics"
        path.write_bytes(("\r\n".join(_fold(line) for line in out) + "\r\n").encode())
        files.append(path)
    return files


def transcript_segments(
    number: int, lines: list[str], nicks: list[str]
) -> Iterator[tuple[str, int, int, str]]:
    """The cues of transcript `number` (speaker, start ms, end ms, text), the same every call."""
    rng = random.Random(SEED * 1000 + number)  # noqa: S311
    speakers = rng.sample(nicks, rng.randint(2, 8))
    at = 0
    while at < 3_600_000:
        length = rng.randint(3_000, 5_000)
        text = rng.choice(lines)
        if len(text) < 40 and rng.random() < 0.5:
            text = f"{text} {rng.choice(lines)}"
        yield rng.choice(speakers), at, at + length - 200, text
        at += length


def _vtt_time(ms: int) -> str:
    return f"{ms // 3_600_000:02}:{ms // 60_000 % 60:02}:{ms // 1000 % 60:02}.{ms % 1000:03}"


def write_transcripts(
    folder: Path, starts: list[datetime], lines: list[str], nicks: list[str]
) -> tuple[list[Path], int]:
    files, total = [], 0
    for number, start in enumerate(starts):
        out = ["WEBVTT", ""]
        for index, (speaker, begin, end, text) in enumerate(
            transcript_segments(number, lines, nicks), start=1
        ):
            escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            out += [str(index), f"{_vtt_time(begin)} --> {_vtt_time(end)}"]
            out += [f"<v {speaker}>{escaped}", ""]
            total += 1
        path = folder / f"GMT{start:%Y%m%d-%H%M%S}_Recording.transcript.vtt"
        path.write_text("\n".join(out), encoding="utf-8")
        files.append(path)
    return files, total


# --- measuring --------------------------------------------------------------------------


def our_import(calendars: list[Path], transcripts: list[Path]) -> dict[str, float]:
    """What `wirecat import` does with each file (archive/imports/meetings.py), then the
    stems drain an import's commit leads to."""
    from archive.connectors.registry import meeting_reader_for
    from meetings.domain import CalendarRead, TranscriptRead
    from meetings.search_index import meeting_stems_drain
    from meetings.services import calendar_store, transcript_store

    figures = dict.fromkeys(
        ("events", "occurrences", "segments", "read", "store", "drain", "calendars"), 0.0
    )
    started = time.perf_counter()
    for path in [*calendars, *transcripts]:
        reader = meeting_reader_for(path)
        assert reader is not None, f"{path.name}: not detected as a meeting file"
        began = time.perf_counter()
        read = reader.read(path, source=path.name)
        read_done = time.perf_counter()
        if isinstance(read, CalendarRead):
            assert not read.problems, read.problems[:3]
            calendar_store(kind="file", key=path.name, read=read)
            figures["events"] += len(read.events)
            figures["occurrences"] += sum(len(event.occurrences) for event in read.events)
        else:
            assert isinstance(read, TranscriptRead)
            transcript_store(read=read, source_name=path.name, meeting=None, started_at=None)
            figures["segments"] += len(read.segments)
        figures["read"] += read_done - began
        figures["store"] += time.perf_counter() - read_done
        if path == calendars[-1]:
            figures["calendars"] = time.perf_counter() - started
    began = time.perf_counter()
    drained = meeting_stems_drain()
    assert drained.left == 0, drained
    figures["drain"] = time.perf_counter() - began
    figures["total"] = time.perf_counter() - started
    figures["transcripts"] = figures["total"] - figures["drain"] - figures["calendars"]
    return figures


def baseline_import(
    db_path: Path, transcripts: int, lines: list[str], nicks: list[str]
) -> tuple[Any, float, int]:
    """The same segments with executemany into a plain table, then FTS5 rebuild."""
    rows = [
        (number, seq, begin, end, speaker, text)
        for number in range(transcripts)
        for seq, (speaker, begin, end, text) in enumerate(transcript_segments(number, lines, nicks))
    ]
    db = sqlean.connect(str(db_path), isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(
        "CREATE TABLE seg (id INTEGER PRIMARY KEY, transcript INTEGER, seq INTEGER,"
        " start_ms INTEGER, end_ms INTEGER, speaker TEXT, text TEXT)"
    )
    db.execute(
        "CREATE VIRTUAL TABLE fts USING fts5(text, content='seg', content_rowid='id',"
        " tokenize='unicode61 remove_diacritics 2')"
    )
    started = time.perf_counter()
    db.execute("BEGIN")
    db.executemany(
        "INSERT INTO seg (transcript, seq, start_ms, end_ms, speaker, text)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        rows,
    )
    db.execute("COMMIT")
    db.execute("INSERT INTO fts(fts) VALUES ('rebuild')")
    return db, time.perf_counter() - started, len(rows)


def make_queries(count: int, nicks_spoken: list[str]) -> list[tuple[str, str, str, list[Any]]]:
    """(kind, query, raw SQL, raw params) with the same terms, `count` in all."""
    rng = random.Random(SEED + 2)  # noqa: S311
    common, mid, rare, texts = term_tiers(
        "meeting_words_vocab", "SELECT text FROM meetings_segment WHERE id % 97 = 0 LIMIT 2000"
    )
    plain = "SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT 20"
    spoken = (
        "SELECT s.id FROM fts JOIN seg AS s ON s.id = fts.rowid WHERE fts MATCH ?"
        " AND s.speaker LIKE ? ORDER BY rank LIMIT 20"
    )
    out: list[tuple[str, str, str, list[Any]]] = []
    while len(out) < count:
        a, b, m, r = rng.choice(common), rng.choice(common), rng.choice(mid), rng.choice(rare)
        words = re.findall(r"[a-z]{3,}", rng.choice(texts).lower()) if texts else []
        start = rng.randrange(max(1, len(words) - 1))
        phrase = " ".join(words[start : start + 2]) if len(words) >= 2 else f"{a} {b}"
        nick = rng.choice(nicks_spoken)
        out += [
            ("common word", a, plain, [f'"{a}"']),
            ("mid word", m, plain, [f'"{m}"']),
            ("rare word", r, plain, [f'"{r}"']),
            ("two words", f"{b} {m}", plain, [f'"{b}" AND "{m}"']),
            ("phrase", f'"{phrase}"', plain, [f'"{phrase}"']),
            ("word from:", f"{m} from:{nick}", spoken, [f'"{m}"', f"{nick}%"]),
        ]
    return out[:count]


def search_phase(base_db: Any, queries: int) -> None:
    """`queries` queries through `meeting_search` against raw MATCH on the baseline store."""
    from django.db import connection

    from meetings.selectors import meeting_search

    with connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT speaker FROM meetings_segment LIMIT 200")
        spoken = sorted(row[0] for row in cursor.fetchall())
    plan = make_queries(queries, spoken)
    service: list[float] = []
    raw: list[float] = []
    by_kind: dict[str, list[float]] = {}
    for kind, query, raw_sql, raw_params in plan:

        def raw_call(sql: str = raw_sql, params: list[Any] = raw_params) -> None:
            base_db.execute(sql, params).fetchall()

        def service_call(q: str = query) -> None:
            meeting_search(query=q, limit=20)

        raw.append(timed(raw_call))
        spent = timed(service_call)
        service.append(spent)
        by_kind.setdefault(kind, []).append(spent)
    base_rows = base_db.execute("SELECT count(*) FROM seg").fetchone()[0]
    base_db.close()
    print(f"search:   {len(plan)} queries over {base_rows:,} segments, median of {RUNS} runs each")
    for label, samples in (("meeting_search", service), ("raw MATCH", raw)):
        p50, p95, top = percentiles(samples)
        print(f"search:   {label:>14}: p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  max {top:7.1f} ms")
    for kind in KINDS:
        if kind in by_kind:
            p50, p95, top = percentiles(by_kind[kind])
            print(f"    {kind:>12}: p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  max {top:7.1f} ms")
    p95_service, p95_raw = percentiles(service)[1], percentiles(raw)[1]
    print(
        f"ratio:    meeting_search p95 / raw p95 = {p95_service / max(p95_raw, 1e-9):.2f};"
        f" target: meeting_search p95 <= 50 ms ({'met' if p95_service <= 50 else 'NOT met'})"
    )


def search_only(work: Path, queries: int) -> None:
    """The search phase alone, on the stores a `--keep` run left in `work`."""
    state, baseline = work / "state", work / "baseline.db"
    if not state.is_dir() or not baseline.is_file():
        raise SystemExit(f"{work}: no kept run here (state/ and baseline.db from --keep)")
    env = {**os.environ, "WIRECAT_STATE_DIR": str(state)}
    subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "migrate", "-v0"], cwd=ROOT, env=env, check=True
    )
    os.environ["WIRECAT_STATE_DIR"] = str(state)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "wirecat.settings")
    import django

    django.setup()
    search_phase(sqlean.connect(str(baseline), isolation_level=None), queries)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--events", type=int, default=None, help="VEVENTs (default 10,000)")
    parser.add_argument("--hours", type=int, default=None, help="hours of transcript (500)")
    parser.add_argument("--queries", type=int, default=None, help="search queries (300)")
    parser.add_argument("--keep", type=Path, help="folder for the files and stores (kept)")
    parser.add_argument(
        "--search-only", type=Path, metavar="DIR", help="only search a kept run's stores"
    )
    parser.add_argument(
        "--quick", action="store_true", help="a quick run: 500 events, 10 hours, 60 queries"
    )
    args = parser.parse_args(argv)
    events = args.events if args.events is not None else (500 if args.quick else 10_000)
    hours = args.hours if args.hours is not None else (10 if args.quick else 500)
    queries = args.queries if args.queries is not None else (60 if args.quick else 300)
    if args.search_only is not None:
        search_only(args.search_only, queries)
        return
    work = args.keep or Path(tempfile.mkdtemp(prefix="wirecat-meetings-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    # Fresh files and stores every run.
    for old in ("files", "state", "baseline.db", "baseline.db-wal", "baseline.db-shm"):
        target = work / old
        shutil.rmtree(target, ignore_errors=True) if target.is_dir() else target.unlink(True)
    files, state = work / "files", work / "state"
    files.mkdir()

    lines, nicks = corpus()
    now = datetime.now(UTC).replace(microsecond=0)
    starts = transcript_starts(hours, now)
    began = time.perf_counter()
    calendars = write_calendars(files, events, starts, lines, nicks)
    transcripts, segments = write_transcripts(files, starts, lines, nicks)
    size = sum(path.stat().st_size for path in files.iterdir()) / 1e6
    print(
        f"input: {events:,} events in {len(calendars)} .ics, {hours:,} hours of WebVTT"
        f" ({segments:,} cues), {size:,.0f} MB, made in {time.perf_counter() - began:.1f} s"
        f" from {len(lines):,} lines of ubuntu-irc (CC-BY-4.0)"
    )

    env = {**os.environ, "WIRECAT_STATE_DIR": str(state)}
    subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "migrate", "-v0"], cwd=ROOT, env=env, check=True
    )
    os.environ["WIRECAT_STATE_DIR"] = str(state)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "wirecat.settings")
    import django

    django.setup()

    ours = our_import(calendars, transcripts)
    rss = peak_rss_mb()
    total = ours["total"]
    print(
        f"import:   {ours['events']:,.0f} events ({ours['occurrences']:,.0f} occurrences) in"
        f" {ours['calendars']:,.1f} s = {ours['events'] / ours['calendars']:,.0f} events/s,"
        f" {ours['occurrences'] / ours['calendars']:,.0f} occurrences/s"
    )
    print(
        f"import:   {ours['segments']:,.0f} segments in {ours['transcripts']:,.1f} s ="
        f" {ours['segments'] / ours['transcripts']:,.0f} segments/s; stems drained in"
        f" {ours['drain']:,.1f} s; with the drain"
        f" {ours['segments'] / (ours['transcripts'] + ours['drain']):,.0f} segments/s"
    )
    print(
        f"import:   total {total:,.1f} s (reading {ours['read']:,.1f} s, services"
        f" {ours['store']:,.1f} s, stems {ours['drain']:,.1f} s); peak RSS {rss} MB"
    )

    base_db, base_seconds, base_rows = baseline_import(
        work / "baseline.db", len(transcripts), lines, nicks
    )
    ours_transcripts = ours["transcripts"] + ours["drain"]
    print(
        f"baseline: {base_rows:,} segments executemany + FTS5 rebuild in {base_seconds:,.1f} s"
        f" = {base_rows / base_seconds:,.0f} segments/s"
    )
    print(
        f"ratio:    transcript import (read, store, stems) {ours_transcripts:,.1f} s ="
        f" {ours_transcripts / base_seconds:.1f} x the baseline's time"
    )

    search_phase(base_db, queries)


if __name__ == "__main__":
    main()
