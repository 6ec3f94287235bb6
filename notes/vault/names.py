"""Names on disk: a folder's or a note's name made one that every file system accepts, and
unique in its directory (as a file system that ignores case compares them)."""

from __future__ import annotations

import re
import unicodedata

NAME_CHARS_MAX = 120  # a file or folder name, before `.md`
NAME_BYTES_MAX = 200  # and in UTF-8 (file systems allow 255; room for " (2)" and a temp name)

_UNSAFE = re.compile(r'[/\\:*?"<>|\x00-\x1f\x7f]')
_RESERVED = {"CON", "PRN", "AUX", "NUL"} | {f"{p}{n}" for p in ("COM", "LPT") for n in range(10)}


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def safe_name(name: str) -> str:
    """A file or folder name every OS accepts: no `/ \\ : * ? " < > |` or control
    characters, no leading dot, no trailing dot or space, not a Windows device name (CON,
    NUL, COM1…), at most NAME_CHARS_MAX characters and NAME_BYTES_MAX bytes."""
    text = _UNSAFE.sub("-", nfc(name))
    text = " ".join(text.split())[:NAME_CHARS_MAX]
    while len(text.encode()) > NAME_BYTES_MAX:
        text = text[:-1]
    text = text.lstrip(". ").rstrip(". ")
    if not text:
        return "Untitled"
    if text.split(".", 1)[0].rstrip(" ").upper() in _RESERVED:
        text = "_" + text
    return text


def unique_name(name: str, taken: set[str], suffix: str = "") -> str:
    """`name`, or `name (2)`, `name (3)`… : the first one not in `taken` (compared as
    case-insensitive file systems do), which it joins."""
    candidate, n = name, 1
    while (candidate + suffix).casefold() in taken:
        n += 1
        candidate = f"{name} ({n})"
    taken.add((candidate + suffix).casefold())
    return candidate
