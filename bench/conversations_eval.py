"""Conversations measured against the research record: the held-out logs of the Ubuntu IRC
train split (Kummerfeld et al., ACL 2019, CC-BY-4.0; every fifth log by name, never read
by training: archive/conversations/rules/corpus.py) go through the app's own commands, and
the links it picks are scored as the paper scores them (disentangle_score.py).

    python bench/conversations_eval.py [--logs N] [--keep DIR]

1. Each log is written as a Telegram Desktop single-chat export (`<stem>/result.json`, the
   chat named by the stem): message id = line number + 1, the nick as sender, the file's
   date and the line's [HH:MM] as time, `===` lines as service messages; no replies, so the
   builder has only what people wrote.
2. `wirecat migrate`, then one `wirecat import` of every export into a fresh store
   (WIRECAT_STATE_DIR in the work folder), timed.
3. `wirecat conversations build` (every chat that needs it), timed.
4. `wirecat conversations links --chat <stem>` for each log; id - 1 is the line again.
5. The annotated lines (from line 1,000 on) are scored: link precision / recall / F, VI,
   1-1 and exact-match F; beside them two baselines on the same lines (each line linked to
   the line before it; each line its own conversation) and the paper's published rows,
   which are on its test split (ten other logs).

`--logs N` takes the first N held-out logs (quick); `--keep DIR` writes the exports and
the store there and keeps them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from archive.conversations.rules import RULES_NAME  # noqa: E402
from archive.conversations.rules.corpus import Sample, samples  # noqa: E402
from bench.disentangle_score import Links, Scores, score  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpora" / "ubuntu-irc" / "train"
ACCOUNT = "Ubuntu IRC held-out"
LINKS_AT_ONCE = 3
# A service message's action: the importer keeps any action, and the line's text after it.
SERVICE_ACTION = "irc_notice"
# A time this much earlier than the line before is the clock turning over (midnight, or
# noon in a 12-hour log); a smaller step back is the clock's jitter and keeps the time
# before it, so times never go backwards.
TURN_OVER = 6 * 60
# Kummerfeld et al. 2019, their results on the test split: link F, VI, 1-1, exact-match F.
PAPER = (
    ("paper: previous", None, 66.1, 27.6, 0.0),
    ("paper: linear", None, 88.9, 69.5, 21.8),
    ("paper: feed-forward", 72.3, 91.3, 75.6, 36.2),
)


# --- the exports ------------------------------------------------------------------------


def stable_int(text: str, digits: int = 12) -> int:
    """A positive number that is the same for the same text in every run."""
    return int(hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:digits], 16)


def line_minutes(sample: Sample) -> list[int]:
    """Each line's minute from the log's midnight, never decreasing: a system line takes
    the time of the line before it (the first timed line's when it leads), and a clock that
    turns over adds twelve hours at a time until it is past the line before."""
    first = next((line.minute for line in sample.lines if line.minute is not None), 0)
    out: list[int] = []
    previous, offset = first, 0
    for line in sample.lines:
        if line.minute is None:
            out.append(previous)
            continue
        minute = line.minute + offset
        if previous - minute >= TURN_OVER:
            while minute < previous:
                offset += 12 * 60
                minute += 12 * 60
        minute = max(minute, previous)
        out.append(minute)
        previous = minute
    return out


def export_messages(sample: Sample) -> Iterator[dict[str, Any]]:
    """The log's lines as Telegram export messages, ids line + 1, no replies."""
    day = datetime.fromisoformat(sample.date).replace(tzinfo=UTC)
    for line, minute in zip(sample.lines, line_minutes(sample), strict=True):
        at = day + timedelta(minutes=minute)
        message: dict[str, Any] = {
            "id": line.number + 1,
            "type": "service" if line.system else "message",
            "date": at.strftime("%Y-%m-%dT%H:%M:%S"),
            "date_unixtime": str(int(at.timestamp())),
        }
        if line.system:
            message["action"] = SERVICE_ACTION
        else:
            message["from"] = line.nick
            message["from_id"] = f"user{stable_int(line.nick)}"
        message["text"] = line.text
        yield message


def export_write(sample: Sample, folder: Path) -> Path:
    """`folder/<stem>/result.json`: the log as a single-chat export of a public group."""
    out = folder / sample.stem / "result.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    chat = {
        "name": sample.stem,
        "type": "public_supergroup",
        "id": stable_int(sample.stem, 10),
        "messages": list(export_messages(sample)),
    }
    out.write_text(json.dumps(chat, ensure_ascii=False, indent=1), encoding="utf-8")
    return out


# --- the links --------------------------------------------------------------------------


def gold_links(sample: Sample) -> dict[int, set[int]]:
    return {child: set(parents) for child, parents in sample.parents.items()}


def links_read(output: str, annotated: set[int]) -> dict[int, set[int]]:
    """`MESSAGE<TAB>PARENT` lines of `wirecat conversations links`, as line -> {parent
    line} for the annotated lines."""
    out: dict[int, set[int]] = {}
    for row in output.splitlines():
        message, _, parent = row.partition("\t")
        line = int(message) - 1
        if line in annotated:
            out[line] = {int(parent) - 1}
    return out


def previous_links(sample: Sample) -> dict[int, set[int]]:
    return {child: {child - 1} for child in sample.parents}


def starts_links(sample: Sample) -> dict[int, set[int]]:
    return {child: {child} for child in sample.parents}


# --- running ----------------------------------------------------------------------------


def wirecat(args: list[str], state: Path) -> tuple[float, str, str]:
    """`wirecat ARGS` in a fresh process against the store in `state`: (seconds, stdout,
    stderr)."""
    env = {**os.environ, "WIRECAT_STATE_DIR": str(state)}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode:
        tail = (done.stdout + done.stderr)[-3000:]
        raise SystemExit(f"wirecat {' '.join(args)[:200]} failed:\n{tail}")
    return elapsed, done.stdout, done.stderr


def row(label: str, link_f: float | None, vi: float, one: float, exact: float) -> str:
    link = f"{link_f:6.1f}" if link_f is not None else "     —"
    return f"  {label:<28} {link} {vi:6.1f} {one:6.1f} {exact:7.1f}"


def scores_row(label: str, scores: Scores) -> str:
    return row(label, scores.link_f, scores.vi, scores.one_to_one, scores.exact_f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=int, help="only the first N held-out logs")
    parser.add_argument("--keep", type=Path, help="folder for the exports and store (kept)")
    args = parser.parse_args()
    began = time.perf_counter()
    logs = list(samples(CORPUS, part="held-out"))[: args.logs]
    if not logs:
        raise SystemExit(f"no held-out logs in {CORPUS}")
    work = args.keep or Path(tempfile.mkdtemp(prefix="wirecat-conv-eval-"))
    work.mkdir(parents=True, exist_ok=True)
    state = work / "state"
    shutil.rmtree(state, ignore_errors=True)  # a fresh store every run
    exports = [export_write(sample, work / "exports") for sample in logs]
    messages = sum(len(sample.lines) for sample in logs)
    annotated = sum(len(sample.parents) for sample in logs)
    print(
        f"input:    {len(logs)} held-out logs of ubuntu-irc (Kummerfeld et al. 2019,"
        f" CC-BY-4.0), {messages:,} messages, {annotated:,} annotated"
    )
    try:
        wirecat(["migrate", "-v0"], state)
        seconds, _, _ = wirecat(["import", "--account", ACCOUNT, *map(str, exports)], state)
        print(
            f"import:   {messages:,} messages in {seconds:.1f} s = {messages / seconds:,.0f} msg/s"
        )
        seconds, output, errors = wirecat(["conversations", "build"], state)
        own = [float(found) for found in re.findall(r" build in ([\d.]+)s", output)]
        built = len(own)
        print(
            f"build:    {built} chats, {messages:,} messages in {seconds:.1f} s ="
            f" {messages / seconds:,.0f} msg/s (the command's wall time; the builds' own"
            f" {sum(own):.1f} s = {messages / max(sum(own), 0.001):,.0f} msg/s)"
        )
        if built != len(logs):
            raise SystemExit(f"{built} of {len(logs)} chats were built:\n{errors[-3000:]}")
        # One `links` process per chat, a few at a time (each mostly starts Django; its
        # system checks are skipped, the store is only read).
        with ThreadPoolExecutor(LINKS_AT_ONCE) as pool:
            outputs = pool.map(
                lambda stem: wirecat(
                    ["conversations", "--skip-checks", "links", "--chat", stem], state
                )[1],
                [sample.stem for sample in logs],
            )
            ours: list[tuple[Links, Links]] = []
            for sample, output in zip(logs, outputs, strict=True):
                gold = gold_links(sample)
                ours.append((gold, links_read(output, set(gold))))
        builder = score(ours)
        previous = score((gold_links(sample), previous_links(sample)) for sample in logs)
        starts = score((gold_links(sample), starts_links(sample)) for sample in logs)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(
        f"scored:   {builder.lines:,} annotated lines of {builder.logs} logs; links"
        f" P {builder.link_precision:.1f} R {builder.link_recall:.1f};"
        f" exact-match P {builder.exact_precision:.1f} R {builder.exact_recall:.1f}"
    )
    print(f"  {'':<28} {'link F':>6} {'VI':>6} {'1-1':>6} {'exact F':>7}")
    print(scores_row(f"builder ({RULES_NAME})", builder))
    print(scores_row("previous line", previous))
    print(scores_row("each its own", starts))
    for label, link_f, vi, one, exact in PAPER:
        print(row(label, link_f, vi, one, exact))
    print(
        f"note:     VI = 100 (1 - VI / log n), n = all {builder.lines:,} lines pooled; the"
        " paper's rows are on its\n          test split (ten other logs): the baselines show"
        " how these logs differ from those"
    )
    print(f"took:     {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
