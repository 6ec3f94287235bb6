"""The learned rules on small hand-made chats: who a message answers, or that it starts a
conversation."""

from __future__ import annotations

from dataclasses import replace

from archive.conversations import rules
from archive.conversations.domain import Candidate, Line

T0 = 1_700_000_000.0
PEOPLE = {"alice": 1, "bob": 2, "carol": 3, "dave": 4, "Alice Walker": 5, "erin": 6}


def chat(*rows: tuple[float, str, str]) -> list[Line]:
    """Lines from (minutes after T0, sender, text); a sender "" is a service line."""
    return [
        Line(
            pk=100 + number,
            sender=PEOPLE.get(name, 0),
            name=name,
            at=T0 + minutes * 60,
            text=text,
            service=not name,
        )
        for number, (minutes, name, text) in enumerate(rows)
    ]


def best(lines: list[Line], index: int) -> Candidate:
    return rules.candidates(lines, index)[0][0]


def test_addressed_links_to_the_addressees_last_message() -> None:
    lines = chat(
        (0, "bob", "hi all"),
        (1, "bob", "how do I mount a usb disk on ubuntu?"),
        (1, "carol", "anyone here using xfce with two screens?"),
        (2, "dave", "carol: yes, works fine with xrandr"),
        (3, "alice", "bob: try sudo mount /dev/sdb1 /mnt"),
    )
    found = best(lines, 4)
    assert found.parent == 101
    assert found.rule == "addressed"
    assert best(lines, 3).parent == 102


def test_thanks_links_to_the_answer() -> None:
    lines = chat(
        (0, "bob", "how do I mount a usb disk?"),
        (1, "alice", "bob: sudo mount /dev/sdb1 /mnt"),
        (1, "carol", "is there a way to change the login screen wallpaper?"),
        (2, "dave", "carol: look in the settings"),
        (3, "bob", "thanks alice, that worked"),
    )
    assert best(lines, 4).parent == 101


def test_a_message_after_a_long_silence_starts_a_conversation() -> None:
    lines = chat(
        (0, "bob", "how do I mount a usb disk?"),
        (1, "alice", "bob: sudo mount /dev/sdb1 /mnt"),
        (2, "bob", "thanks"),
        (300, "dave", "has anyone tried the new kernel on a thinkpad?"),
    )
    found = best(lines, 3)
    assert found.parent is None and found.rule == "starts"


def test_no_rule_links_across_a_silence_of_hours() -> None:
    """Even the strongest reasons (the same pair talking, the addressee's name) never link
    across more than MAX_GAP_SECONDS: the chat moved on."""
    day = 24 * 60
    lines = chat(
        (0, "bob", "alice: did you get the tickets?"),
        (1, "alice", "bob: yes, two for friday"),
        (day, "bob", "alice: thanks again for yesterday"),
        (day + 1, "alice", "bob: any time"),
    )
    found = rules.candidates(lines, 2)
    assert [c.parent for c in found[0]] == [None]
    assert found[1][0].parent == lines[2].pk  # within the new day, linking goes on


def test_the_same_sender_going_on() -> None:
    lines = chat(
        (0, "alice", "anyone know why my wifi drops every few minutes"),
        (0, "carol", "good morning"),
        (1, "alice", "it is an intel card, on the 6.5 kernel, and dmesg shows firmware errors"),
    )
    assert best(lines, 2).parent == 100


def test_a_name_with_a_space_is_addressed_by_its_first_name() -> None:
    lines = chat(
        (0, "Alice Walker", "does the backup run at night?"),
        (0, "bob", "who is coming to the meeting later?"),
        (1, "carol", "I am, bob"),
        (2, "erin", "ALICE, yes it starts at 2am"),
    )
    assert best(lines, 3).parent == 100


def test_a_messenger_reply_counts_as_addressing() -> None:
    lines = chat(
        (0, "bob", "my printer stopped working after the upgrade"),
        (1, "carol", "that looks fine to me"),
        (1, "dave", "try restarting cups"),
        (2, "erin", "sure, see you at lunch"),
        (3, "bob", "that did it"),
    )
    replied = [*lines[:2], replace(lines[2], reply_to=100), *lines[3:]]
    assert best(replied, 4).parent == 102


def test_a_join_starts_a_conversation() -> None:
    lines = chat(
        (0, "bob", "how do I mount a usb disk?"),
        (0, "", "dave has joined"),
    )
    assert best(lines, 1).parent is None


def test_only_the_asked_lines_get_candidates_all_earlier_and_starts_among_them() -> None:
    lines = chat(
        *(
            (minute // 2, ("alice", "bob", "carol", "")[minute % 4], f"line {minute} about disks?")
            for minute in range(40)
        )
    )
    start = 25
    proposed = rules.candidates(lines, start, top=3)
    assert len(proposed) == len(lines) - start
    for offset, found in enumerate(proposed):
        index = start + offset
        earlier = {line.pk for line in lines[:index]}
        assert 1 <= len(found) <= 3
        assert any(c.parent is None for c in found)
        assert all(c.parent is None or c.parent in earlier for c in found)
        assert all(0 <= c.confidence <= 1 and c.rule for c in found)
        assert [c.confidence for c in found] == sorted((c.confidence for c in found), reverse=True)
    assert rules.candidates(lines, len(lines)) == []


def test_the_first_line_can_only_start() -> None:
    lines = chat((0, "bob", "alice: hello?"))
    assert [c.parent for c in rules.candidates(lines, 0)[0]] == [None]


def test_the_shipped_model_loads_and_is_these_rules() -> None:
    learned = rules.model_read()
    assert learned.name == rules.MODEL_NAME
    assert learned.window <= rules.CONTEXT
    assert rules.MODEL_FILE.stat().st_size < 200_000


def test_one_candidate_asked_still_leaves_starting_as_a_choice() -> None:
    lines = chat((0, "bob", "how do I mount a usb disk?"), (1, "alice", "bob: sudo mount it"))
    found = rules.candidates(lines, 1, top=1)[0]
    assert [c.parent for c in found] == [100, None]
