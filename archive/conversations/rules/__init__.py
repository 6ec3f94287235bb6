"""The rules: for each message, the earlier messages it most likely answers, with
confidence, or that it starts a conversation.

`candidates(lines, start)` is the whole interface: `lines` are consecutive live messages of
one chat in the chat's order, `lines[:start]` only context. It reads nothing else, so the
builder, the agent's batches and the evaluation all get the same answers for the same lines.

The weights are learned (train.py) from the Ubuntu IRC disentanglement corpus (Kummerfeld et
al., ACL 2019, CC-BY-4.0): each of a message's `WINDOW` earlier lines and "starts a
conversation" is scored from what people do in chats (addressing, time, the same sender
going on, question and answer, thanks, shared rare words, joins) and the scores are turned
into confidences with a softmax over the message's candidates.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from archive.conversations.domain import Candidate, Line
from archive.conversations.rules import features

MODEL_FILE = Path(__file__).with_name("model.json")
# The shipped weights (train.py writes this name into model.json).
MODEL_NAME = "ubuntu-irc-mlp 1"
# What made the links, recorded with each build: a build by other rules is rebuilt.
RULES_NAME = f"{MODEL_NAME}, silence 3 h"
# How many lines before the first one asked about the rules read.
CONTEXT = 100
TOP = 3
# Lines scored at once: bounds the feature array (lines x candidates x features).
CHUNK = 1000
# The rules never link across a silence longer than this: the chat moved on. (In the
# training logs 15 of 52,641 gold links span more; a chat of a messenger can fall silent for
# days, where the model, which never saw such gaps, would go on linking.) A recorded reply
# or an agent's answer still links across any gap.
MAX_GAP_SECONDS = 3 * 3600.0


@dataclass(frozen=True)
class Model:
    """The shipped weights: a linear score plus one layer of rectified units."""

    name: str
    window: int
    w: np.ndarray
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    idf: dict[str, float]
    idf_unknown: float
    families: np.ndarray  # feature -> family number, for naming the reason

    def scores(self, x: np.ndarray) -> np.ndarray:
        """Each candidate's score."""
        linear = x @ self.w
        if not len(self.b1):
            return linear
        return linear + np.maximum(x @ self.w1 + self.b1, 0.0) @ self.w2

    def shares(self, x: np.ndarray) -> np.ndarray:
        """Each feature's share in a candidate's score (exact for rectified units: the
        weights through the units that are on)."""
        if not len(self.b1):
            return x * self.w
        on = (x @ self.w1 + self.b1) > 0
        return x * (self.w + np.einsum("nkh,fh->nkf", on * self.w2, self.w1))


FAMILY_NAMES = tuple(features.FAMILIES)


def model_read(path: Path = MODEL_FILE) -> Model:
    raw = json.loads(path.read_text(encoding="utf-8"))
    if list(raw["features"]) != list(features.FEATURES):
        raise ValueError(f"{path} was trained on other features: train it again")
    w1 = np.array(raw["w1"], dtype=np.float32).reshape(len(features.FEATURES), -1)
    return Model(
        name=raw["name"],
        window=int(raw["window"]),
        w=np.array(raw["w"], dtype=np.float32),
        w1=w1,
        b1=np.array(raw["b1"], dtype=np.float32),
        w2=np.array(raw["w2"], dtype=np.float32),
        idf=dict(raw["idf"]),
        idf_unknown=float(raw["idf_unknown"]),
        families=np.array(
            [FAMILY_NAMES.index(features.family_of(name)) for name in features.FEATURES]
        ),
    )


@cache
def model() -> Model:
    return model_read()


def candidates(lines: Sequence[Line], start: int, *, top: int = TOP) -> list[list[Candidate]]:
    """Each of `lines[start:]`'s candidate parents, best first (at most `top`, at least the
    best one and "starts a conversation", parent None, which is always among them)."""
    if start >= len(lines):
        return []
    learned = model()
    page = features.Page(lines, learned.idf, learned.idf_unknown)
    window = learned.window
    grouping = np.zeros((len(features.FEATURES), len(FAMILY_NAMES)), dtype=np.float32)
    grouping[np.arange(len(features.FEATURES)), learned.families] = 1.0
    not_reasons = [FAMILY_NAMES.index("starts"), FAMILY_NAMES.index("line")]
    at = np.array([line.at for line in lines], dtype=np.float64)
    back = np.arange(1, window + 1)[None, :]
    out: list[list[Candidate]] = []
    for begin in range(start, len(lines), CHUNK):
        indices = np.arange(begin, min(begin + CHUNK, len(lines)))
        x, mask = page.matrix(indices, window)
        earlier = np.maximum(indices[:, None] - back, 0)
        mask[:, :window] &= at[indices][:, None] - at[earlier] <= MAX_GAP_SECONDS
        score = learned.scores(x)
        score = np.where(mask, score, -np.inf)
        score -= score.max(axis=1, keepdims=True)
        p = np.exp(score)
        p /= p.sum(axis=1, keepdims=True)
        keep = min(top, window + 1)
        best = np.argsort(-p, axis=1, kind="stable")[:, :keep]
        rows = np.arange(len(indices))[:, None]
        # The reason: the family of features that adds most to the candidate's score.
        family = learned.shares(x[rows, best]) @ grouping
        family[:, :, not_reasons] = -np.inf
        reason = family.argmax(axis=2)
        for row, index in enumerate(indices.tolist()):
            found: list[Candidate] = []
            has_start = False
            for slot, k in enumerate(best[row].tolist()):
                confidence = round(float(p[row, k]), 4)
                if k == window:
                    has_start = True
                    found.append(Candidate(None, confidence, "starts"))
                elif mask[row, k] and (confidence > 0 or slot == 0):
                    name = FAMILY_NAMES[reason[row, slot]]
                    found.append(Candidate(lines[index - k - 1].pk, confidence, name))
            if not has_start:
                found = found[: max(1, top - 1)]
                found.append(Candidate(None, round(float(p[row, window]), 4), "starts"))
            out.append(found)
    return out
