"""Train the rules' model on the Ubuntu IRC disentanglement corpus and write `model.json`.

The corpus is Kummerfeld et al., "A Large-Scale Corpus for Conversation Disentanglement",
ACL 2019, data under CC-BY-4.0 (../shared/corpora/ubuntu-irc). Only its "train" part is read
(corpus.py keeps every fifth log out for measuring); of that, every sixth log is held out
here to choose the settings and report the figures, then the model is fitted on all of it.

The model ranks, for every annotated line, its `WINDOW` earlier lines and "starts a
conversation" with a softmax over the candidates' scores (a conditional logit): a linear
score plus a small hidden layer of rectified units, learned with Adam and an L2 penalty.

    .venv/bin/python -m archive.conversations.rules.train [--corpus DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections import Counter
from pathlib import Path

import numpy as np

from archive.conversations.domain import Line
from archive.conversations.rules import MODEL_NAME, features
from archive.conversations.rules.corpus import Sample, samples

CORPUS = Path(__file__).resolve().parents[3].parent / "shared/corpora/ubuntu-irc/train"
OUT = Path(__file__).with_name("model.json")
WINDOW = 100
TUNE_EVERY = 6  # of the train logs, every sixth is held out for tuning
FIRST_GOLD = 1000
SEED = 20
TURN_OVER = 6 * 60  # minutes back that mean the clock turned over, not jitter
IDF_MIN_COUNT = 12  # rarer words are not shipped: they get the unknown word's weight


def sample_lines(sample: Sample, nicks: dict[str, int]) -> list[Line]:
    """A log as the rules see a chat: one Line per log line, the nick as the sender, minute
    timestamps that never go back (a system line takes the time of the line before; a clock
    turning over, at midnight or at noon in a 12-hour log, adds twelve hours at a time), as
    the app gets them from an export of the log."""
    out: list[Line] = []
    minute = next((line.minute for line in sample.lines if line.minute is not None), 0)
    offset = 0
    for line in sample.lines:
        if line.minute is not None:
            while line.minute + offset <= minute - TURN_OVER:
                offset += 12 * 60
            minute = max(minute, line.minute + offset)
        sender = 0 if line.system else nicks.setdefault(line.nick, len(nicks) + 1)
        out.append(
            Line(
                pk=line.number,
                sender=sender,
                name=line.nick,
                at=minute * 60.0,
                text=line.text,
                service=line.system,
            )
        )
    return out


def idf_of(logs: list[list[Line]]) -> tuple[dict[str, float], float]:
    """Inverse line frequency of the words, and the weight of a word not kept."""
    counts: Counter[str] = Counter()
    total = 0
    for lines in logs:
        for line in lines:
            if not line.service:
                total += 1
                counts.update({w for w in features._WORD.findall(line.text.casefold())})
    kept = {
        word: round(math.log(total / count), 2)
        for word, count in counts.items()
        if count >= IDF_MIN_COUNT and len(word) >= 3
    }
    return kept, round(math.log(total / (IDF_MIN_COUNT / 2)), 2)


class Data:
    """Features of every annotated line of some logs, with its gold candidates."""

    def __init__(
        self, logs: list[tuple[Sample, list[Line]]], idf: dict[str, float], unknown: float
    ):
        xs, masks, golds, counts = [], [], [], []
        for sample, lines in logs:
            asked = np.array(sorted(c for c in sample.parents if c >= FIRST_GOLD), dtype=np.int64)
            if not len(asked):
                continue
            page = features.Page(lines, idf, unknown)
            x, mask = page.matrix(asked, WINDOW)
            gold = np.zeros(mask.shape, dtype=bool)
            for row, child in enumerate(asked):
                parents = sample.parents[int(child)]
                counts.append(len(parents))
                for parent in parents:
                    if parent == child:
                        gold[row, WINDOW] = True
                    elif 0 < child - parent <= WINDOW:
                        gold[row, child - parent - 1] = True
            xs.append(x)
            masks.append(mask)
            golds.append(gold)
        self.x = np.concatenate(xs)
        self.mask = np.concatenate(masks)
        self.gold = np.concatenate(golds)
        self.links = np.array(counts)


class Model:
    """A linear score plus `hidden` rectified units, over each candidate's features."""

    def __init__(self, size: int, hidden: int, rng: np.random.Generator):
        self.w = np.zeros(size, dtype=np.float32)
        self.b1 = np.zeros(hidden, dtype=np.float32)
        self.w1 = (rng.standard_normal((size, hidden)) * (1.0 / math.sqrt(size))).astype(np.float32)
        self.w2 = (rng.standard_normal(hidden) * 0.1).astype(np.float32)
        self.hidden = hidden

    def params(self) -> list[np.ndarray]:
        return [self.w, self.w1, self.b1, self.w2] if self.hidden else [self.w]

    def scores(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        linear = x @ self.w
        if not self.hidden:
            return linear, None
        h = np.maximum(x @ self.w1 + self.b1, 0.0)
        return linear + h @ self.w2, h


def _softmax(scores: np.ndarray, mask: np.ndarray) -> np.ndarray:
    scores = np.where(mask, scores, -1e9)
    scores = scores - scores.max(axis=1, keepdims=True)
    e = np.exp(scores) * mask
    return e / e.sum(axis=1, keepdims=True)


def fit(data: Data, *, hidden: int, l2: float, epochs: int, seed: int = SEED) -> Model:
    """Adam on batches of lines; the loss is minus the log of the gold candidates' share."""
    rng = np.random.default_rng(seed)
    model = Model(data.x.shape[2], hidden, rng)
    usable = np.flatnonzero(data.gold.any(axis=1))
    moments = [(np.zeros_like(p), np.zeros_like(p)) for p in model.params()]
    step = 0
    batch = 256
    for epoch in range(epochs):
        order = rng.permutation(usable)
        rate = 0.01 * (0.5 ** (epoch / max(1, epochs / 3)))
        total = 0.0
        for begin in range(0, len(order), batch):
            rows = np.sort(order[begin : begin + batch])
            x, mask, gold = data.x[rows], data.mask[rows], data.gold[rows]
            scores, h = model.scores(x)
            p = _softmax(scores, mask)
            share = (p * gold).sum(axis=1)
            total -= float(np.log(np.maximum(share, 1e-12)).sum())
            # d(-log sum_gold p)/d score = p - p*gold/share
            d = (p - p * gold / share[:, None]).astype(np.float32) / len(rows)
            grads = [np.einsum("nk,nkf->f", d, x) + l2 * model.w]
            if h is not None:
                dh = d[:, :, None] * model.w2[None, None, :] * (h > 0)
                g_w1 = np.einsum("nkf,nkh->fh", x, dh) + l2 * model.w1
                g_b1 = dh.sum(axis=(0, 1))
                g_w2 = np.einsum("nk,nkh->h", d, h) + l2 * model.w2
                grads += [g_w1, g_b1, g_w2]
            step += 1
            for param, grad, (m, v) in zip(model.params(), grads, moments, strict=True):
                m *= 0.9
                m += 0.1 * grad
                v *= 0.999
                v += 0.001 * grad * grad
                param -= rate * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
        print(f"  epoch {epoch + 1}/{epochs}: loss {total / len(usable):.4f}", flush=True)
    return model


def measure(model: Model, data: Data) -> dict[str, float]:
    """Link precision, recall and F: one predicted parent per line against its gold ones."""
    right = 0
    for begin in range(0, len(data.x), 2048):
        scores, _ = model.scores(data.x[begin : begin + 2048])
        mask = data.mask[begin : begin + 2048]
        best = np.where(mask, scores, -1e9).argmax(axis=1)
        right += int(data.gold[begin : begin + 2048][np.arange(len(best)), best].sum())
    precision = right / len(data.x)
    recall = right / int(data.links.sum())
    return {
        "precision": round(100 * precision, 2),
        "recall": round(100 * recall, 2),
        "f": round(100 * 2 * precision * recall / (precision + recall), 2),
        "lines": len(data.x),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--l2", type=float, default=1e-4)
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()
    started = time.monotonic()
    nicks: dict[str, int] = {}
    logs = [(s, sample_lines(s, nicks)) for s in samples(args.corpus, part="train")]
    tune = [log for k, log in enumerate(logs) if k % TUNE_EVERY == TUNE_EVERY - 1]
    learn = [log for k, log in enumerate(logs) if k % TUNE_EVERY != TUNE_EVERY - 1]
    print(f"{len(logs)} train logs: {len(learn)} to learn from, {len(tune)} to tune on")
    idf, unknown = idf_of([lines for _, lines in learn])
    learn_data = Data(learn, idf, unknown)
    tune_data = Data(tune, idf, unknown)
    print(
        f"features of {len(learn_data.x)} + {len(tune_data.x)} lines"
        f" ({time.monotonic() - started:.0f} s)"
    )
    model = fit(learn_data, hidden=args.hidden, l2=args.l2, epochs=args.epochs)
    figures = measure(model, tune_data)
    print(f"tuning hold-out: {figures} ({time.monotonic() - started:.0f} s)")
    print("fitting on all the train logs")
    idf, unknown = idf_of([lines for _, lines in logs])
    del learn_data, tune_data
    model = fit(Data(logs, idf, unknown), hidden=args.hidden, l2=args.l2, epochs=args.epochs)
    written = {
        "name": MODEL_NAME,
        "corpus": (
            "Ubuntu IRC disentanglement corpus, train split: Kummerfeld et al., 'A Large-Scale"
            " Corpus for Conversation Disentanglement', ACL 2019, CC-BY-4.0"
        ),
        "trained": {
            "logs": len(logs),
            "hidden": args.hidden,
            "l2": args.l2,
            "epochs": args.epochs,
            "seed": SEED,
            "tuning_hold_out": figures,
        },
        "window": WINDOW,
        "features": list(features.FEATURES),
        "w": _rounded(model.w),
        "w1": _rounded(model.w1.reshape(-1)) if args.hidden else [],
        "b1": _rounded(model.b1) if args.hidden else [],
        "w2": _rounded(model.w2) if args.hidden else [],
        "idf_unknown": unknown,
        "idf": dict(sorted(idf.items())),
    }
    args.out.write_text(json.dumps(written, separators=(",", ":")) + "\n", encoding="utf-8")
    print(
        f"wrote {args.out} ({args.out.stat().st_size // 1024} KB,"
        f" {time.monotonic() - started:.0f} s)"
    )


def _rounded(values: np.ndarray) -> list[float]:
    return [round(float(v), 5) for v in values]


if __name__ == "__main__":
    main()
