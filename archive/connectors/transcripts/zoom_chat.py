"""Zoom's in-meeting chat, saved as text (`meeting_saved_chat.txt`, or `chat.txt` of a
cloud recording). Three layouts are read:

    one line (older clients)   `10:02:31\\t From  Alice Walker : hello`
                               `10:02:45\\t From  Bob Lee  to  Everyone : hi all`
                               `10:03:01\\t From  Bob Lee  to  Alice Walker(Privately) : psst`
    two lines (newer clients)  `10:02:31 From Alice Walker to Everyone:`
                               `\\thello` (each line of the message indented by a tab)
    cloud recording            `00:12:04\\tAlice Walker:\\thello` (time since the recording
                               began, not of the day)

Every message is a segment at one instant (its end is its start), its sender the speaker.
The times of day count from the first message (`notes["first_time_of_day"]`), a day added
when they pass midnight; a cloud recording's are already from its start
(`notes["clock"] == "elapsed"`). A message not sent to everyone is marked at the start of
its text: "(privately to Alice Walker) …". Lines before the first message are problems.

A WhatsApp export never reads as this, nor this as one: every Zoom line starts with a time
alone, every WhatsApp line with a date (tests/connectors/test_transcripts.py holds both).
"""

from __future__ import annotations

import re

from archive.connectors.transcripts.common import Cue, Problems

_TIME = r"(?P<h>\d{1,2}):(?P<m>\d{2}):(?P<s>\d{2})"
ONE_LINE = re.compile(rf"^{_TIME}\t\s*From\s+(?P<who>.+?)\s+:(?:[ \t](?P<text>.*))?$")
TWO_LINES = re.compile(rf"^{_TIME} From (?P<who>.+?):[ \t]*$")
RECORDING = re.compile(rf"^{_TIME}\t(?P<who>[^\t]+?):\t(?P<text>.*)$")
_PRIVATE = re.compile(r"\s*\((?:privately|direct message)\)\s*$", re.I)
_DAY_MS = 24 * 3_600_000


def layout_of(line: str) -> str | None:
    """The layout whose message line `line` is ("one_line", "two_lines", "recording")."""
    if ONE_LINE.match(line):
        return "one_line"
    if RECORDING.match(line):
        return "recording"
    if TWO_LINES.match(line):
        return "two_lines"
    return None


def _sender(who: str, layout: str) -> tuple[str, str]:
    """(sender, recipient) of `Alice  to  Everyone` ("" recipient when not written)."""
    splitter = re.compile(r"\s{2}to\s{2}" if layout == "one_line" else r" to ")
    parts = splitter.split(who)
    if len(parts) < 2 and layout == "one_line":
        parts = re.split(r" to ", who)
    if len(parts) < 2:
        return who.strip(), ""
    # The recipient is the last part: a sender's name may hold " to ", "Everyone" cannot.
    return " to ".join(parts[:-1]).strip(), parts[-1].strip()


def _addressed(text: str, recipient: str) -> str:
    if not recipient or recipient.lower() == "everyone":
        return text
    private = _PRIVATE.search(recipient)
    if private:
        return f"(privately to {recipient[: private.start()].strip()}) {text}"
    return f"(to {recipient}) {text}"


def read_zoom_chat(text: str, problems: Problems) -> tuple[list[Cue], dict[str, str]]:
    """The messages of a Zoom chat text, and the notes its times need."""
    lines = text.split("\n")
    layout = next((found for line in lines if (found := layout_of(line.rstrip("\r")))), "")
    notes: dict[str, str] = {"layout": layout}
    head = {"one_line": ONE_LINE, "two_lines": TWO_LINES, "recording": RECORDING}.get(layout)
    if head is None:
        return [], notes

    messages: list[tuple[int, int, str, str, list[str]]] = []  # line, ms, from, to, lines
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r")
        match = head.match(line)
        if match is not None:
            ms = (int(match["h"]) * 3600 + int(match["m"]) * 60 + int(match["s"])) * 1000
            sender, recipient = _sender(match["who"], layout)
            first = match.groupdict().get("text")
            messages.append((number, ms, sender, recipient, [] if first is None else [first]))
        elif messages:
            messages[-1][4].append(line.removeprefix("\t") if layout == "two_lines" else line)
        elif line.strip():
            problems.add(f"line {number}", "not a chat message; the line was skipped")

    cues: list[Cue] = []
    elapsed = layout == "recording"
    notes["clock"] = "elapsed" if elapsed else "time_of_day"
    first_ms = messages[0][1] if messages else 0
    if messages and not elapsed:
        notes["first_time_of_day"] = _clock(first_ms)
    day = 0
    previous = first_ms
    for number, ms, sender, recipient, body in messages:
        if not elapsed and ms < previous:
            day += 1  # past midnight
        previous = ms
        at = ms if elapsed else ms - first_ms + day * _DAY_MS
        joined = "\n".join(line.strip() for line in body if line.strip())
        if joined:
            cues.append(Cue(at, at, _addressed(joined, recipient), sender, f"line {number}"))
        else:
            problems.add(f"line {number}", "a message with no text; it was skipped")
    return cues, notes


def _clock(ms: int) -> str:
    seconds = ms // 1000
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
