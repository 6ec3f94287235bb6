"""Scoring a disentanglement against gold reply links, as Kummerfeld et al. (ACL 2019,
section 4.3) define it and their released evaluation (graph-eval.py and
conversation-eval.py in jkkummerfeld/irc-disentanglement) computes it. Written from those
definitions; nothing of theirs is copied.

Links are given per log as `{child: {parents}}` over the annotated lines only; a line that
starts a conversation is its own parent. Every figure pools all logs, as their scripts do:

- link precision / recall / F: a (child, parent) pair is right when the gold has it;
  precision over the predicted pairs, recall over the gold pairs (a line may have several
  gold parents, and a self-link is a pair like any other);
- conversations: the connected components of each log's link graph (nodes: the annotated
  lines and the parents they name, which may be context lines before them), each kept to its
  annotated lines; gold and predicted the same way;
- VI: 100 * (1 - VI / log n), VI the variation of information H(G|P) + H(P|G) between
  the two partitions of the n scored lines (the paper's "VI" column is this similarity);
- 1-1: the one-to-one overlap (Elsner and Charniak, 2008): gold and predicted conversations
  paired one to one so that the messages they share are most, as a percentage of n;
- exact match: a gold conversation of two or more lines is matched when a predicted one
  holds exactly its lines; precision over the predicted conversations of two or more
  lines, recall over the gold ones (their script skips single-line conversations on both
  sides).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

Links = Mapping[int, Iterable[int]]  # child line -> its parents (itself when it starts one)


@dataclass(frozen=True)
class Scores:
    """Every figure in percent; `lines` scored, `logs` pooled."""

    link_precision: float
    link_recall: float
    link_f: float
    vi: float
    one_to_one: float
    exact_precision: float
    exact_recall: float
    exact_f: float
    lines: int
    logs: int


def _f(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def conversations(links: Links) -> list[frozenset[int]]:
    """The connected components of the link graph, each kept to the children of `links`
    (the annotated lines); union-find with path halving."""
    root: dict[int, int] = {}

    def find(node: int) -> int:
        root.setdefault(node, node)
        while root[node] != node:
            root[node] = root[root[node]]
            node = root[node]
        return node

    for child, parents in links.items():
        for parent in parents:
            a, b = find(child), find(parent)
            if a != b:
                root[max(a, b)] = min(a, b)
    groups: dict[int, set[int]] = {}
    for child in links:
        groups.setdefault(find(child), set()).add(child)
    return [frozenset(group) for group in groups.values()]


def max_assignment(weights: Sequence[Sequence[float]]) -> float:
    """The largest total weight of a one-to-one assignment of rows to columns (rows may
    stay unassigned when there are more of them): the Hungarian method with potentials,
    O(rows² · columns) with rows ≤ columns."""
    if not weights or not weights[0]:
        return 0.0
    if len(weights) > len(weights[0]):
        weights = [list(column) for column in zip(*weights, strict=True)]
    rows, columns = len(weights), len(weights[0])
    top = max(max(row) for row in weights)
    # Minimise cost = top - weight; every row is assigned, which is no loss as rows ≤ columns
    # and weights are never negative.
    cost = [[top - value for value in row] for row in weights]
    u = [0.0] * (rows + 1)
    v = [0.0] * (columns + 1)
    owner = [0] * (columns + 1)  # owner[j]: the row (1-based) holding column j; 0 for none
    way = [0] * (columns + 1)
    for row in range(1, rows + 1):
        owner[0] = row
        current = 0
        least = [math.inf] * (columns + 1)
        used = [False] * (columns + 1)
        while True:
            used[current] = True
            i = owner[current]
            delta, nxt = math.inf, 0
            cost_row, u_i = cost[i - 1], u[i]
            for j in range(1, columns + 1):
                if not used[j]:
                    reduced = cost_row[j - 1] - u_i - v[j]
                    if reduced < least[j]:
                        least[j], way[j] = reduced, current
                    if least[j] < delta:
                        delta, nxt = least[j], j
            for j in range(columns + 1):
                if used[j]:
                    u[owner[j]] += delta
                    v[j] -= delta
                else:
                    least[j] -= delta
            current = nxt
            if owner[current] == 0:
                break
        while current:
            back = way[current]
            owner[current] = owner[back]
            current = back
    return sum(weights[owner[j] - 1][j - 1] for j in range(1, columns + 1) if owner[j])


def one_to_one_overlap(gold: list[frozenset[int]], predicted: list[frozenset[int]]) -> int:
    """The messages shared by the best one-to-one pairing of gold and predicted
    conversations. Conversations that share nothing never gain from being paired, so each
    connected part of the overlap graph is matched on its own (one large cluster against
    many small ones stays a single row)."""
    where = {line: index for index, group in enumerate(predicted) for line in group}
    overlap: dict[tuple[int, int], int] = Counter()
    for g, group in enumerate(gold):
        for line in group:
            overlap[g, where[line]] += 1
    # Components over gold nodes g and predicted nodes -1 - p.
    parent: dict[int, int] = {}

    def find(node: int) -> int:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for g, p in overlap:
        a, b = find(g), find(-1 - p)
        if a != b:
            parent[a] = b
    parts: dict[int, list[tuple[int, int]]] = {}
    for g, p in overlap:
        parts.setdefault(find(g), []).append((g, p))
    shared = 0.0
    for pairs in parts.values():
        rows = sorted({g for g, _ in pairs})
        columns = sorted({p for _, p in pairs})
        if len(rows) == 1 or len(columns) == 1:
            shared += max(overlap[pair] for pair in pairs)
            continue
        row_at = {g: i for i, g in enumerate(rows)}
        column_at = {p: j for j, p in enumerate(columns)}
        matrix = [[0.0] * len(columns) for _ in rows]
        for g, p in pairs:
            matrix[row_at[g]][column_at[p]] = overlap[g, p]
        shared += max_assignment(matrix)
    return round(shared)


def _entropy(sizes: Iterable[int], total: int) -> float:
    return -sum(size / total * math.log(size / total) for size in sizes if size)


def score(logs: Iterable[tuple[Links, Links]]) -> Scores:
    """The figures for (gold, predicted) links of each log, pooled. Both must name the same
    children (the annotated lines); every predicted child has at least one parent."""
    gold_pairs = predicted_pairs = right = 0
    lines = count = 0
    shared = 0
    joint: list[int] = []
    gold_sizes: list[int] = []
    predicted_sizes: list[int] = []
    exact = gold_many = predicted_many = 0
    for gold, predicted in logs:
        if set(gold) != set(predicted):
            missing = sorted(set(gold) ^ set(predicted))[:5]
            raise ValueError(f"gold and predicted name different lines, e.g. {missing}")
        count += 1
        lines += len(gold)
        for child, parents in gold.items():
            wanted = set(parents)
            chosen = set(predicted[child])
            if not chosen:
                raise ValueError(f"line {child} has no predicted parent")
            gold_pairs += len(wanted)
            predicted_pairs += len(chosen)
            right += len(wanted & chosen)
        gold_groups = conversations(gold)
        predicted_groups = conversations(predicted)
        where = {line: index for index, group in enumerate(predicted_groups) for line in group}
        for group in gold_groups:
            joint.extend(Counter(where[line] for line in group).values())
        gold_sizes.extend(len(group) for group in gold_groups)
        predicted_sizes.extend(len(group) for group in predicted_groups)
        shared += one_to_one_overlap(gold_groups, predicted_groups)
        many = {group for group in predicted_groups if len(group) > 1}
        predicted_many += len(many)
        for group in gold_groups:
            if len(group) > 1:
                gold_many += 1
                exact += group in many
    if not lines:
        raise ValueError("nothing to score")
    # VI = H(G,P) - I(G;P) = 2 H(G,P) - H(G) - H(P).
    vi = 2 * _entropy(joint, lines) - _entropy(gold_sizes, lines) - _entropy(predicted_sizes, lines)
    scaled = 100 * (1 - vi / math.log(lines)) if lines > 1 else 100.0
    link_p = 100 * right / predicted_pairs
    link_r = 100 * right / gold_pairs
    exact_p = 100 * exact / predicted_many if predicted_many else 0.0
    exact_r = 100 * exact / gold_many if gold_many else 0.0
    return Scores(
        link_precision=link_p,
        link_recall=link_r,
        link_f=_f(link_p, link_r),
        vi=scaled,
        one_to_one=100 * shared / lines,
        exact_precision=exact_p,
        exact_recall=exact_r,
        exact_f=_f(exact_p, exact_r),
        lines=lines,
        logs=count,
    )
