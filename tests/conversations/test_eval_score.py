"""The evaluation's parts: the scorer (bench/disentangle_score.py) on small cases whose
answers are worked out by hand, and the writer of a log as a Telegram export
(bench/conversations_eval.py) through the real importer and the real builder, and the
script itself end to end on one log in its own store."""

from __future__ import annotations

import itertools
import math
import random
import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from archive.conversations.rules.corpus import Sample, log_line, sample_read
from archive.conversations.services.builds import conversations_build
from archive.imports.models import ImportStatus
from archive.imports.services import import_job_create, import_run
from archive.store.models import Chat, Message
from bench.conversations_eval import export_write, line_minutes, links_read
from bench.disentangle_score import (
    conversations,
    max_assignment,
    one_to_one_overlap,
    score,
)
from tests.bench_run import bench_run

# --- the scorer -------------------------------------------------------------------------

# Two threads over lines 10-13: 10 and 12, 11 and 13.
TWO_THREADS = {10: {10}, 11: {11}, 12: {10}, 13: {11}}


def test_identical_links_score_100_everywhere() -> None:
    gold = {10: {10}, 11: {10}, 12: {12}, 13: {11}, 14: {12}, 15: {15}}
    scores = score([(gold, gold), (TWO_THREADS, TWO_THREADS)])
    for figure in (
        scores.link_precision,
        scores.link_recall,
        scores.link_f,
        scores.vi,
        scores.one_to_one,
        scores.exact_precision,
        scores.exact_recall,
        scores.exact_f,
    ):
        assert figure == pytest.approx(100.0)
    assert (scores.lines, scores.logs) == (10, 2)


def test_every_line_to_the_previous_against_two_threads() -> None:
    previous = {line: {line - 1} for line in TWO_THREADS}  # line 10 names context line 9
    scores = score([(TWO_THREADS, previous)])
    # No predicted pair is a gold one.
    assert (scores.link_precision, scores.link_recall, scores.link_f) == (0.0, 0.0, 0.0)
    # One predicted conversation against two of two lines each: VI = H(G|P) + H(P|G) =
    # 1 bit + 0, over log2(4) = 2 bits.
    assert scores.vi == pytest.approx(50.0)
    # It pairs with one thread: 2 of the 4 lines.
    assert scores.one_to_one == pytest.approx(50.0)
    assert scores.exact_f == 0.0


def test_each_line_alone_against_two_threads() -> None:
    alone = {line: {line} for line in TWO_THREADS}
    scores = score([(TWO_THREADS, alone)])
    # The self-links of 10 and 11 are right: 2 of 4 predicted, 2 of 4 gold.
    assert scores.link_precision == pytest.approx(50.0)
    assert scores.link_recall == pytest.approx(50.0)
    # H(G|P) = 0, H(P|G) = 1 bit (each thread split in two), over 2 bits.
    assert scores.vi == pytest.approx(50.0)
    assert scores.one_to_one == pytest.approx(50.0)
    # Single-line conversations are not counted: nothing predicted, nothing matched.
    assert (scores.exact_precision, scores.exact_recall, scores.exact_f) == (0.0, 0.0, 0.0)


def test_vi_of_a_log_pooled_with_another() -> None:
    """VI pools every log's lines, as the paper's script does: n = 8 here."""
    previous = {line: {line - 1} for line in TWO_THREADS}
    scores = score([(TWO_THREADS, previous), (TWO_THREADS, TWO_THREADS)])
    # H(G|P): half the lines sit in a predicted conversation split evenly: 0.5 bit.
    assert scores.vi == pytest.approx(100 * (1 - 0.5 / math.log2(8)))
    assert scores.one_to_one == pytest.approx(100 * 6 / 8)


def test_exact_match_counts_only_identical_conversations() -> None:
    # gold {1,2,3} {4,5} {6}; predicted {1,2,3} {4} {5,6}
    gold = {1: {1}, 2: {1}, 3: {2}, 4: {4}, 5: {4}, 6: {6}}
    predicted = {1: {1}, 2: {1}, 3: {1}, 4: {4}, 5: {5}, 6: {5}}
    scores = score([(gold, predicted)])
    # {1,2,3} matches; {4,5} and {5,6} do not; {6} and {4} are single lines, not counted.
    assert scores.exact_precision == pytest.approx(50.0)
    assert scores.exact_recall == pytest.approx(50.0)
    assert scores.exact_f == pytest.approx(50.0)
    # Links: those of 1, 2 and 4 are right, of 6 predicted and 6 gold.
    assert scores.link_precision == pytest.approx(50.0)
    assert scores.link_recall == pytest.approx(50.0)


def test_several_gold_parents_count_in_recall_only() -> None:
    gold = {1: {1}, 2: {1}, 3: {1, 2}}
    scores = score([(gold, {1: {1}, 2: {1}, 3: {2}})])
    assert scores.link_precision == pytest.approx(100.0)
    assert scores.link_recall == pytest.approx(75.0)


def test_a_context_parent_joins_the_lines_that_name_it() -> None:
    """Conversations are components of the whole link graph, kept to the scored lines: two
    lines that answer the same context line (999) are one conversation."""
    groups = conversations({1000: {999}, 1001: {999}, 1002: {1002}})
    assert sorted(sorted(group) for group in groups) == [[1000, 1001], [1002]]


def test_one_to_one_takes_the_best_pairing_not_the_greedy_one() -> None:
    # A = {1..5}, B = {6, 7}; X = {1, 2, 3, 6, 7}, Y = {4, 5}. Greedy pairs A-X (3) and is
    # left with B-Y (0); the best is A-Y (2) + B-X (2).
    gold = [frozenset({1, 2, 3, 4, 5}), frozenset({6, 7})]
    predicted = [frozenset({1, 2, 3, 6, 7}), frozenset({4, 5})]
    assert one_to_one_overlap(gold, predicted) == 4
    gold_links = {1: {1}, 2: {1}, 3: {2}, 4: {3}, 5: {4}, 6: {6}, 7: {6}}
    predicted_links = {1: {1}, 2: {1}, 3: {2}, 6: {3}, 7: {6}, 4: {4}, 5: {4}}
    assert score([(gold_links, predicted_links)]).one_to_one == pytest.approx(100 * 4 / 7)


def test_assignment_agrees_with_trying_every_pairing() -> None:
    rng = random.Random(20)
    for _ in range(200):
        rows, columns = rng.randint(1, 5), rng.randint(1, 5)
        weights = [[rng.choice((0, 0, 1, 2, 3, 7)) for _ in range(columns)] for _ in range(rows)]
        if rows <= columns:
            best = max(
                sum(weights[i][j] for i, j in enumerate(chosen))
                for chosen in itertools.permutations(range(columns), rows)
            )
        else:
            best = max(
                sum(weights[i][j] for j, i in enumerate(chosen))
                for chosen in itertools.permutations(range(rows), columns)
            )
        assert max_assignment(weights) == best, weights


def test_gold_and_prediction_must_name_the_same_lines() -> None:
    with pytest.raises(ValueError, match="different lines"):
        score([(TWO_THREADS, {10: {10}, 11: {11}, 12: {10}})])


# --- the export -------------------------------------------------------------------------

LOG = """\
[23:58] <alice> anyone know how to mount a usb disk?
=== bob [~bob@example.org]  has joined #ubuntu
[23:59] <bob> alice: sudo mount /dev/sdb1 /mnt
[23:59]  * carol waves
[00:01] <alice> bob: thanks, that worked
[00:02] <carol> what's new in dapper?
"""
ANNOTATION = """\
0 0 -
1 1 -
0 2 -
3 3 -
2 4 -
5 5 -
"""


def test_minutes_turn_over_at_midnight_and_at_noon_of_a_12_hour_log() -> None:
    sample = _sample_of("[23:58] <a> x\n=== j\n[00:01] <b> y\n")
    assert line_minutes(sample) == [1438, 1438, 1441]
    sample = _sample_of("[11:59] <a> x\n[00:00] <b> y\n[00:00] <a> z\n")
    assert line_minutes(sample) == [719, 720, 720]
    # A step back of a minute is the clock's jitter: the time stays where it was.
    sample = _sample_of("[10:05] <a> x\n[10:04] <b> y\n")
    assert line_minutes(sample) == [605, 605]


def _sample_of(raw: str) -> Sample:
    lines = [log_line(number, text) for number, text in enumerate(raw.splitlines())]
    return Sample("2006-05-01.test", "2006-05-01", 0, lines)


@pytest.mark.django_db(transaction=True)
def test_a_log_imports_as_a_telegram_chat_without_replies(tmp_path: Path) -> None:
    (tmp_path / "2006-05-01.train-z.raw.txt").write_text(LOG, encoding="utf-8")
    (tmp_path / "2006-05-01.train-z.annotation.txt").write_text(ANNOTATION, encoding="utf-8")
    sample = sample_read(tmp_path / "2006-05-01.train-z.raw.txt")
    export = export_write(sample, tmp_path / "exports")
    assert export == tmp_path / "exports" / "2006-05-01.train-z" / "result.json"

    job = import_run(job_id=import_job_create(source=export, account_name="IRC").pk)
    assert job.status == ImportStatus.DONE and job.format == "telegram"
    chat = Chat.objects.get()
    assert chat.title == "2006-05-01.train-z"
    messages = list(Message.objects.filter(chat=chat).order_by("sent_at", "id"))
    assert [m.external_id for m in messages] == ["1", "2", "3", "4", "5", "6"]
    assert all(m.reply_to_external_id == "" and m.reply_to_id is None for m in messages)
    assert [m.kind for m in messages] == ["text", "service", "text", "text", "text", "text"]
    assert "has joined #ubuntu" in messages[1].text and messages[1].sender_id is None
    assert messages[0].sender is not None and messages[0].sender.display_name == "alice"
    assert messages[4].sender_id == messages[0].sender_id  # one identity per nick
    assert messages[3].text == "carol waves"
    # The service line keeps the time before it; past midnight is the next day.
    assert [m.sent_at.strftime("%d %H:%M") for m in messages] == [
        "01 23:58",
        "01 23:58",
        "01 23:59",
        "01 23:59",
        "02 00:01",
        "02 00:02",
    ]

    # The builder's links, read back as the evaluation reads them: lines again.
    conversations_build(chat_id=chat.pk)
    out = StringIO()
    call_command("conversations", "links", "--chat", chat.title, stdout=out)
    links = links_read(out.getvalue(), set(sample.parents))
    assert set(links) == {0, 1, 2, 3, 4, 5}
    assert all(len(parents) == 1 and max(parents) <= line for line, parents in links.items())
    assert score([(sample.parents, links)]).lines == 6


def test_the_evaluation_runs_end_to_end_on_one_log(tmp_path: Path) -> None:
    """`bench/conversations_eval.py --logs 1`: import, build, links, scores and the table,
    in its own store."""
    out = bench_run(
        "conversations_eval.py",
        "--logs",
        "1",
        "--keep",
        str(tmp_path / "kept"),
        tmp_path=tmp_path,
        timeout=600,
    )
    assert re.search(
        r"^input: +1 held-out logs .*CC-BY-4\.0\), 1,500 messages, 500 annotated", out, re.M
    )
    assert re.search(r"^import: +1,500 messages in [\d.]+ s = [\d,]+ msg/s", out, re.M)
    assert re.search(r"^build: +1 chats, 1,500 messages in [\d.]+ s", out, re.M)
    assert re.search(r"^scored: +500 annotated lines of 1 logs", out, re.M)
    figures = r"( +[\d.]+){4}$"
    for label in (r"builder \(.+\)", "previous line", "each its own"):
        assert re.search(rf"^  {label}{figures}", out, re.M), out
    assert re.search(r"^  paper: feed-forward +72\.3 +91\.3 +75\.6 +36\.2$", out, re.M)
    assert (tmp_path / "kept" / "exports" / "2005-05-14.train-c" / "result.json").is_file()
    assert (tmp_path / "kept" / "state" / "wirecat.db").is_file()
