"""Build a Telegram Desktop whole-account export (result.json) from the real chat lines of
../shared/corpora/ubuntu-irc: nicks become senders, each log becomes a chat per "year"
copy with shifted dates, gold reply links become replies; some messages are edited, some
carry formatting entities, `===` lines become service messages.

    python bench/make_telegram_export.py OUT.json --messages 1000000

Written as a stream: memory stays flat whatever the size.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "ubuntu-irc" / "train"
LINE = re.compile(r"^\[(\d\d):(\d\d)\] (?:<([^>]+)> |\s?\* (\S+) )?(.*)$")
OWNER_ID = 4_000_000


def user_id(nick: str) -> int:
    return int(hashlib.sha256(nick.encode()).hexdigest()[:7], 16)


def logs() -> list[tuple[str, list[str], dict[int, int]]]:
    out = []
    for raw in sorted(CORPUS.glob("*.raw.txt")):
        lines = raw.read_text(errors="replace").splitlines()
        parents: dict[int, int] = {}
        annotation = raw.with_name(raw.name.replace(".raw.txt", ".annotation.txt"))
        if annotation.exists():
            for row in annotation.read_text().splitlines():
                parts = row.split()
                if len(parts) >= 2 and parts[0] != parts[1]:
                    parents.setdefault(int(parts[1]), int(parts[0]))
        out.append((raw.name[:10], lines, parents))
    return out


def chat_messages(
    day: str, lines: list[str], parents: dict[int, int], shift_years: int, id_base: int
) -> Iterator[dict[str, object]]:
    base = datetime.fromisoformat(day).replace(tzinfo=UTC)
    base = base.replace(year=base.year + shift_years)
    for index, line in enumerate(lines):
        match = LINE.match(line)
        mid = id_base + index
        if match is None:
            if line.startswith("==="):
                stamp = base + timedelta(seconds=index)
                yield {
                    "id": mid,
                    "type": "service",
                    "date": stamp.strftime("%Y-%m-%dT%H:%M:%S"),
                    "date_unixtime": str(int(stamp.timestamp())),
                    "actor": "ChanServ",
                    "actor_id": "user1",
                    "action": "invite_members",
                    "members": [line[4:60]],
                    "text": "",
                }
            continue
        hh, mm, nick, action_nick, text = match.groups()
        nick = nick or action_nick or "someone"
        stamp = base + timedelta(hours=int(hh), minutes=int(mm), seconds=index % 60)
        message: dict[str, object] = {
            "id": mid,
            "type": "message",
            "date": stamp.strftime("%Y-%m-%dT%H:%M:%S"),
            "date_unixtime": str(int(stamp.timestamp())),
            "from": nick,
            "from_id": f"user{user_id(nick)}" if index % 7 else user_id(nick),  # 2020-style ids too
            "text": text,
        }
        if index in parents:
            message["reply_to_message_id"] = id_base + parents[index]
        if index % 50 == 0:
            edited = stamp + timedelta(minutes=3)
            message["edited"] = edited.strftime("%Y-%m-%dT%H:%M:%S")
            message["edited_unixtime"] = str(int(edited.timestamp()))
        if index % 23 == 0 and text:
            head, _, tail = text.partition(" ")
            message["text"] = [{"type": "bold", "text": head}, " " + tail]
            message["text_entities"] = [
                {"type": "bold", "text": head},
                {"type": "plain", "text": " " + tail},
            ]
        yield message


def write(out: Path, target: int) -> int:
    corpus = logs()
    written = 0
    with out.open("w", encoding="utf-8") as handle:
        handle.write(
            '{\n "about": "Generated from the Ubuntu IRC corpus for WireCat benchmarks",\n'
        )
        handle.write(
            ' "personal_information": '
            + json.dumps(
                {
                    "user_id": OWNER_ID,
                    "first_name": "Bench",
                    "last_name": "Owner",
                    "phone_number": "+10000000000",
                    "username": "@bench",
                }
            )
            + ",\n"
        )
        handle.write(' "chats": {\n  "about": "chats",\n  "list": [\n')
        first_chat = True
        shift = 0
        while written < target:
            for number, (day, lines, parents) in enumerate(corpus):
                if written >= target:
                    break
                chat_id = 10_000 + shift * 1000 + number
                if not first_chat:
                    handle.write(",\n")
                first_chat = False
                handle.write(
                    '   {"name": '
                    + json.dumps(f"#ubuntu {day} (+{shift}y)")
                    + ', "type": "public_supergroup", "id": '
                    + str(chat_id)
                    + ', "messages": [\n'
                )
                first = True
                for message in chat_messages(day, lines, parents, shift, 1):
                    if written >= target:
                        break
                    if not first:
                        handle.write(",\n")
                    first = False
                    handle.write("    " + json.dumps(message, ensure_ascii=False))
                    written += 1
                handle.write("\n   ]}")
            shift += 1
        handle.write("\n  ]\n }\n}\n")
    return written


def _messages(target: int) -> Iterator[dict[str, object]]:
    """The corpus's messages, log after log (each log shifted a year per pass), until
    `target`."""
    corpus = logs()
    written = shift = 0
    first_id = 1  # a log's ids are first_id + its line numbers: never one used before
    while True:
        for day, lines, parents in corpus:
            for message in chat_messages(day, lines, parents, shift, first_id):
                if written >= target:
                    return
                written += 1
                yield message
            first_id += len(lines)
        shift += 1


def write_chats(folder: Path, target: int, per_chat: int = 5_000) -> list[Path]:
    """`target` messages as single-chat exports ("Export chat history"), `per_chat` each:
    `folder/chat-NNN/result.json`, the way Telegram Desktop writes one chat."""
    files: list[Path] = []
    handle = None
    for number, message in enumerate(_messages(target)):
        if number % per_chat == 0:
            if handle is not None:
                handle.write("\n ]\n}\n")
                handle.close()
            chat_no = len(files) + 1
            path = folder / f"chat-{chat_no:03d}" / "result.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            files.append(path)
            handle = path.open("w", encoding="utf-8")
            handle.write(
                '{\n "name": '
                + json.dumps(f"#ubuntu part {chat_no}")
                + ',\n "type": "public_supergroup",\n "id": '
                + str(20_000 + chat_no)
                + ',\n "messages": [\n'
            )
        else:
            assert handle is not None
            handle.write(",\n")
        handle.write("  " + json.dumps(message, ensure_ascii=False))
    if handle is not None:
        handle.write("\n ]\n}\n")
        handle.close()
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="a result.json, or a folder with --per-chat")
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument(
        "--per-chat", type=int, help="write single-chat exports of this many messages each"
    )
    args = parser.parse_args()
    if args.per_chat:
        files = write_chats(args.out, args.messages, args.per_chat)
        size = sum(path.stat().st_size for path in files)
        print(f"wrote {args.messages:,} messages in {len(files)} files ({size / 1e6:.0f} MB)")
        return
    count = write(args.out, args.messages)
    print(f"wrote {count:,} messages to {args.out} ({args.out.stat().st_size / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
