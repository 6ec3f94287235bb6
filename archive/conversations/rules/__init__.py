"""The rules: for each message, the earlier messages it most likely answers, with
confidence, or that it starts a conversation.

`candidates(lines, start)` is the whole interface: `lines` are consecutive live messages of
one chat in the chat's order, `lines[:start]` only context. It reads nothing else, so the
builder, the agent's batches and the evaluation all get the same answers for the same lines.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from archive.conversations.domain import Candidate, Line

# What made the links, recorded with each build: a build by other rules is rebuilt.
RULES_NAME = "plain 1"
# How many lines before the first one asked about the rules read.
CONTEXT = 100
TOP = 3

_ADDRESS = re.compile(r"^\s*@?([\w.\-\[\]`^{}|]{1,40})\s*[:,]")


def candidates(lines: Sequence[Line], start: int, *, top: int = TOP) -> list[list[Candidate]]:
    """Each of `lines[start:]`'s candidate parents, best first (at most `top`)."""
    out: list[list[Candidate]] = []
    for index in range(start, len(lines)):
        line = lines[index]
        found: list[Candidate] = []
        match = _ADDRESS.match(line.text)
        if match:
            name = match.group(1).casefold()
            for back in range(index - 1, max(-1, index - CONTEXT), -1):
                if lines[back].name.casefold() == name:
                    found.append(Candidate(lines[back].pk, 0.8, "addressed"))
                    break
        if index > 0 and line.at - lines[index - 1].at < 600:
            previous = lines[index - 1]
            if not found or found[0].parent != previous.pk:
                found.append(Candidate(previous.pk, 0.4, "previous"))
        found.append(Candidate(None, 0.3, "starts"))
        out.append(found[:top])
    return out
