"""What the learned rules see of a message and each earlier message it may answer.

`Page(lines)` reads every line once (who it addresses, mentions, asks, thanks; who talked
with whom); `Page.matrix(indices, window)` then gives, for each asked line, one row of
features per candidate: the `window` lines before it (nearest first) and, last, the line
itself ("starts a conversation"). Training and the rules call the same code, so a model
sees in the app exactly what it was trained on.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Mapping, Sequence

import numpy as np

from archive.conversations.domain import Line

_WORD = re.compile(r"[\w][\w'.\-/]*[\w]|\w")
_NAMEISH = re.compile(r"[^\s@:,.!?;'\"()<>]{2,40}")
_LEAD = re.compile(r"^\s*@?([^\s:,]{1,40})\s*([:,>]?)")
_LEAD_TWO = re.compile(r"^\s*@?(\S{1,40}\s\S{1,40})\s*[:,]")
_THANKS = re.compile(r"\b(thanks?|thx|thnx|ty|tyvm|cheers|thank\s+you)\b", re.IGNORECASE)
_ACK = re.compile(
    r"^\W*(ok|okay|k|kk|yes|yeah|yep|yup|no|nope|nah|sure|right|cool|great|nice|ah+|oh+|"
    r"aha|hmm+|i see|got it|that worked|it works|works|worked|np|no problem|yw|indeed|"
    r"exactly|true|correct|lol|:\)|:p|:d)\b",
    re.IGNORECASE,
)
_GREETING = re.compile(
    r"^\W*(hi|hello|hey|hiya|howdy|yo|greetings|good (morning|evening|afternoon)|"
    r"(does|can|could|is|has) (any|some)(one|body)|any(one|body)|some(one|body)|"
    r"how (do|can) i|is (it|there)|where (can|do|is)|what is|why (does|is)|question)\b",
    re.IGNORECASE,
)
_CODE = re.compile(r"(^|\s)(sudo|apt-get|apt|/etc/|/dev/|/usr/|~/|\$ |\bls\b|\bcd\b)")

# How many mentions of other people one line keeps, and how many recent partners.
MENTIONS = 3
PARTNERS = 4
DIST_EDGES = (1, 2, 3, 4, 5, 7, 10, 15, 25, 50, 100)
TALK_EDGES = (1, 2, 3, 5, 10, 100)
GAP_EDGES = (0.5, 1.5, 3.0, 6.0, 15.0, 60.0)  # minutes
WORD_MIN_IDF = 3.0  # words more common than this are stopwords for overlap


def _names(name: str) -> list[str]:
    """The keys a person may be called by: the whole name, and its first word."""
    folded = " ".join(name.casefold().split())
    if not folded:
        return []
    keys = [folded, folded.lstrip("@")]
    first = folded.split()[0].lstrip("@")
    if len(first) >= 2:
        keys.append(first)
    trimmed = folded.rstrip("_-^`|0123456789")
    if len(trimmed) >= 3 and trimmed != folded:
        keys.append(trimmed)
    return keys


def _clean(token: str) -> str:
    return token.casefold().strip("@:,.!?;'\"()<>[]")


class Page:
    """Everything per line the features need, read once for a run of consecutive lines."""

    def __init__(self, lines: Sequence[Line], idf: Mapping[str, float], idf_unknown: float):
        n = len(lines)
        self.n = n
        self.lines = lines
        who: dict[object, int] = {}
        sender = np.empty(n, dtype=np.int64)
        for index, line in enumerate(lines):
            # A service line (a join, a topic) is nobody's turn in a conversation, as in
            # the corpus, whoever the messenger says did it.
            if line.service:
                key: object = ("nobody", index)
            elif line.sender:
                key = line.sender
            elif line.name:
                key = ("name", line.name.casefold())
            else:
                key = ("nobody", index)
            sender[index] = who.setdefault(key, len(who))
        self.sender = sender
        # Who a name means: the latest speaker called so (names are learned from the page).
        called: dict[str, int] = {}
        for index, line in enumerate(lines):
            if not line.service:
                for key in _names(line.name):
                    called[key] = int(sender[index])
        position = {line.pk: index for index, line in enumerate(lines)}
        at = np.array([line.at for line in lines], dtype=np.float64)
        self.minutes = at / 60.0
        self.service = np.array([line.service for line in lines], dtype=bool)
        address = np.full(n, -1, dtype=np.int64)
        address_plain = np.zeros(n, dtype=bool)
        mentions = np.full((n, MENTIONS), -1, dtype=np.int64)
        question = np.zeros(n, dtype=bool)
        thanks = np.zeros(n, dtype=bool)
        ack = np.zeros(n, dtype=bool)
        greeting = np.zeros(n, dtype=bool)
        code = np.zeros(n, dtype=bool)
        short = np.zeros(n, dtype=bool)
        long = np.zeros(n, dtype=bool)
        words: list[list[tuple[str, float]]] = []
        for index, line in enumerate(lines):
            text = line.text
            own = int(sender[index])
            found = -1
            match = _LEAD_TWO.match(text)
            if match and match.group(1).casefold() in called:
                found = called[match.group(1).casefold()]
            else:
                match = _LEAD.match(text)
                if match:
                    key = _clean(match.group(1))
                    if key in called:
                        found = called[key]
                        address_plain[index] = not match.group(2) and not text.lstrip().startswith(
                            "@"
                        )
            if found < 0 and line.reply_to in position:
                # a messenger's reply addresses the replied-to message's sender
                found = int(sender[position[line.reply_to]])
            if found == own:
                found = -1
            address[index] = found
            tokens = text.split()
            seen: list[int] = []
            for token in _NAMEISH.findall(text.casefold()):
                target = called.get(token, -1)
                if target >= 0 and target != own and target not in seen:
                    seen.append(target)
                    if len(seen) == MENTIONS:
                        break
            mentions[index, : len(seen)] = seen
            question[index] = "?" in text
            thanks[index] = bool(_THANKS.search(text))
            ack[index] = bool(_ACK.match(text))
            greeting[index] = bool(_GREETING.match(text))
            code[index] = bool(_CODE.search(text))
            short[index] = len(tokens) <= 3
            long[index] = len(tokens) > 15
            kept: dict[str, float] = {}
            if not line.service:
                for word in _WORD.findall(text.casefold()):
                    if len(word) < 3 or word in called:
                        continue
                    weight = idf.get(word, idf_unknown)
                    if weight >= WORD_MIN_IDF:
                        kept[word] = weight
            words.append(list(kept.items()))
        self.address = address
        self.address_plain = address_plain
        self.mentions = mentions
        self.question = question
        self.thanks = thanks
        self.ack = ack
        self.greeting = greeting
        self.code = code
        self.short = short
        self.long = long
        self.words = words
        # The same sender's previous and next line, and who each sender talked with lately.
        previous = np.full(n, -1, dtype=np.int64)
        following = np.full(n, n, dtype=np.int64)
        last: dict[int, int] = {}
        partners = np.full((n, PARTNERS), -1, dtype=np.int64)
        recent: dict[int, list[int]] = {}
        for index in range(n):
            own = int(sender[index])
            before = last.get(own)
            if before is not None:
                previous[index] = before
                following[before] = index
            last[own] = index
            mine = recent.get(own, [])
            partners[index, : len(mine)] = mine[-PARTNERS:][::-1]
            targets = {int(t) for t in mentions[index] if t >= 0}
            if address[index] >= 0:
                targets.add(int(address[index]))
            for target in targets:
                for a, b in ((own, target), (target, own)):
                    row = recent.setdefault(a, [])
                    if b in row:
                        row.remove(b)
                    row.append(b)
                    del row[:-PARTNERS]
        self.previous = previous
        self.following = following
        self.partners = partners

    def overlap(self, indices: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
        """Shared rare words of each asked line with each of its `window` earlier lines:
        the summed IDF and the count."""
        total = np.zeros((len(indices), window), dtype=np.float32)
        count = np.zeros((len(indices), window), dtype=np.float32)
        where: dict[str, list[int]] = {}
        low = max(0, int(indices.min()) - window) if len(indices) else 0
        high = int(indices.max()) if len(indices) else 0
        row_of = {int(i): r for r, i in enumerate(indices)}
        for index in range(low, high + 1):
            row = row_of.get(index)
            if row is not None:
                for word, weight in self.words[index]:
                    spots = where.get(word)
                    if not spots:
                        continue
                    first = bisect.bisect_left(spots, index - window)
                    for spot in spots[first:]:
                        total[row, index - spot - 1] += weight
                        count[row, index - spot - 1] += 1
            for word, _ in self.words[index]:
                where.setdefault(word, []).append(index)
        return total, count

    def matrix(self, indices: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
        """Features `[len(indices), window + 1, FEATURES]` and which candidates exist
        (`[len(indices), window + 1]`); candidate k < window is line `i - k - 1`, the last
        one is the line itself."""
        m = len(indices)
        i = indices[:, None]
        back = np.arange(1, window + 1)[None, :]
        j = i - back
        valid = j >= 0
        jc = np.where(valid, j, 0)
        s_i = self.sender[i]
        s_j = self.sender[jc]
        # Built feature by feature (each a contiguous block), turned round at the end.
        columns = np.zeros((len(FEATURES), m, window + 1), dtype=np.float32)

        def put(name: str, values: np.ndarray) -> None:
            columns[INDEX[name], :, :window] = values

        # distance and time
        for bucket, (lo, hi) in enumerate(zip((0, *DIST_EDGES[:-1]), DIST_EDGES, strict=True)):
            put(f"dist_{bucket}", (back > lo) & (back <= hi))
        put("log_dist", np.log(back).astype(np.float32))
        gap = np.maximum(self.minutes[i] - self.minutes[jc], 0.0)
        edges = (-1.0, *GAP_EDGES, math.inf)
        for bucket in range(len(GAP_EDGES) + 1):
            put(f"gap_{bucket}", (gap > edges[bucket]) & (gap <= edges[bucket + 1]))
        put("log_gap", np.log1p(gap))
        # distance in messages, joins and other service lines not counted
        spoken = np.cumsum(~self.service)
        talk = spoken[np.maximum(i - 1, 0)] - spoken[jc] + ~self.service[jc]
        for bucket, (lo, hi) in enumerate(zip((0, *TALK_EDGES[:-1]), TALK_EDGES, strict=True)):
            put(f"talk_{bucket}", (talk > lo) & (talk <= hi))
        # who
        same = s_i == s_j
        latest_j = self.following[jc] >= i
        own_previous = self.previous[i] == j
        put("same", same)
        put("same_previous", own_previous)
        put("same_previous_near", own_previous & (back == 1))
        put("j_latest", latest_j & ~same)
        put("i_spoke_since", (self.previous[i] > j) & ~same)
        put("j_first", (self.previous[jc] < 0) & ~same)
        a_i = self.address[i]
        a_j = self.address[jc]
        addressed = (a_i == s_j) & (a_i >= 0)
        put("addressed", addressed)
        put("addressed_latest", addressed & latest_j)
        put("addressed_plain", addressed & self.address_plain[i])
        mentioned = (self.mentions[i] == s_j[:, :, None]).any(axis=2)
        mentioned &= ~addressed
        put("mentioned", mentioned)
        put("mentioned_latest", mentioned & latest_j)
        other = (a_i >= 0) & ~addressed & ~same
        put("addresses_other", other)
        j_to_i = (a_j == s_i) & (a_j >= 0)
        put("j_addressed_i", j_to_i)
        put("j_addressed_i_latest", j_to_i & latest_j)
        j_mentions_i = (self.mentions[jc] == s_i[:, :, None]).any(axis=2) & ~j_to_i
        put("j_mentioned_i", j_mentions_i)
        j_other = (a_j >= 0) & ~j_to_i & ~same
        put("j_addresses_other", j_other)
        put("j_addresses_other_unaddressed", j_other & (a_i < 0))
        put("same_addressee", (a_j >= 0) & (a_j == a_i) & ~same)
        partner = (self.partners[i] == s_j[:, :, None]).any(axis=2) & ~same
        put("partner", partner)
        put("partner_latest", partner & latest_j)
        put("j_service", self.service[jc])
        put("j_service_near", self.service[jc] & (back <= 3))
        # what
        q_i = self.question[i]
        q_j = self.question[jc]
        put("j_question", q_j & ~same)
        put("j_question_i_not", q_j & ~q_i & ~same)
        put("j_question_latest", q_j & ~same & latest_j)
        put("j_greeting", self.greeting[jc] & ~same)
        put("thanks_j_addressed_i", self.thanks[i] & (j_to_i | j_mentions_i))
        put("thanks_other", self.thanks[i] & ~same)
        put("ack_question", self.ack[i] & q_j & ~same)
        put("ack_near", self.ack[i] & (back <= 2) & ~same)
        put("ack_j_addressed_i", self.ack[i] & j_to_i)
        put("j_code", self.code[jc] & ~same)
        put("j_ack", self.ack[jc])
        put("j_thanks", self.thanks[jc])
        # what the line itself is like: no use alone (the same for every candidate), but the
        # hidden units combine it with the rest
        for name, values in (
            ("i_question", self.question),
            ("i_ack", self.ack),
            ("i_thanks", self.thanks),
            ("i_greeting", self.greeting),
            ("i_short", self.short),
            ("i_long", self.long),
            ("i_addresses", self.address >= 0),
            ("i_mentions", self.mentions[:, 0] >= 0),
            ("i_service", self.service),
        ):
            put(name, np.broadcast_to(values[i], (m, window)))
        put("j_short", self.short[jc])
        put("j_long", self.long[jc])
        total, count = self.overlap(indices, window)
        put("words_idf", np.log1p(total))
        put("words_one", count >= 1)
        put("words_two", count >= 2)
        columns[:, :, :window] *= valid
        # the line itself: starts a conversation
        n_i = indices
        before = np.maximum(n_i - 1, 0)
        gap_me = np.where(n_i > 0, self.minutes[n_i] - self.minutes[before], 1e6)
        own_back = np.where(self.previous[n_i] >= 0, n_i - self.previous[n_i], 10**6)
        starts = {
            "starts": np.ones(m, dtype=bool),
            "starts_service": self.service[n_i],
            "starts_addresses": self.address[n_i] >= 0,
            "starts_mentions": self.mentions[n_i, 0] >= 0,
            "starts_question": self.question[n_i],
            "starts_greeting": self.greeting[n_i],
            "starts_ack": self.ack[n_i],
            "starts_thanks": self.thanks[n_i],
            "starts_code": self.code[n_i],
            "starts_short": self.short[n_i],
            "starts_long": self.long[n_i],
            "starts_log_gap": np.log1p(np.clip(gap_me, 0, 1e4)),
            "starts_gap_long": gap_me > 30,
            "starts_new_sender": own_back > window,
            "starts_own_near": own_back <= 3,
            "starts_first": n_i == 0,
        }
        for name, values in starts.items():
            columns[INDEX[name], :, window] = values
        mask = np.concatenate([valid, np.ones((m, 1), dtype=bool)], axis=1)
        return np.ascontiguousarray(columns.transpose(1, 2, 0)), mask


FEATURES: tuple[str, ...] = (
    *(f"dist_{b}" for b in range(len(DIST_EDGES))),
    "log_dist",
    *(f"gap_{b}" for b in range(len(GAP_EDGES) + 1)),
    "log_gap",
    *(f"talk_{b}" for b in range(len(TALK_EDGES))),
    "same",
    "same_previous",
    "same_previous_near",
    "j_latest",
    "i_spoke_since",
    "j_first",
    "addressed",
    "addressed_latest",
    "addressed_plain",
    "mentioned",
    "mentioned_latest",
    "addresses_other",
    "j_addressed_i",
    "j_addressed_i_latest",
    "j_mentioned_i",
    "j_addresses_other",
    "j_addresses_other_unaddressed",
    "same_addressee",
    "partner",
    "partner_latest",
    "j_service",
    "j_service_near",
    "j_question",
    "j_question_i_not",
    "j_question_latest",
    "j_greeting",
    "thanks_j_addressed_i",
    "thanks_other",
    "ack_question",
    "ack_near",
    "ack_j_addressed_i",
    "j_code",
    "j_ack",
    "j_thanks",
    "i_question",
    "i_ack",
    "i_thanks",
    "i_greeting",
    "i_short",
    "i_long",
    "i_addresses",
    "i_mentions",
    "i_service",
    "j_short",
    "j_long",
    "words_idf",
    "words_one",
    "words_two",
    "starts",
    "starts_service",
    "starts_addresses",
    "starts_mentions",
    "starts_question",
    "starts_greeting",
    "starts_ack",
    "starts_thanks",
    "starts_code",
    "starts_short",
    "starts_long",
    "starts_log_gap",
    "starts_gap_long",
    "starts_new_sender",
    "starts_own_near",
    "starts_first",
)
INDEX = {name: k for k, name in enumerate(FEATURES)}

# The reason a candidate is given: the family of its strongest features ("line" and
# "starts" are what the message itself is like, never a reason to link it to a candidate).
FAMILIES = {
    "addressed": (
        "address",
        "mentioned",
        "j_addressed",
        "j_mentioned",
        "partner",
        "same_addressee",
    ),
    "same-sender": ("same",),
    "answer": ("j_question", "ack_question", "j_greeting", "j_code"),
    "thanks": ("thanks", "ack_"),
    "words": ("words_",),
    "time": ("dist_", "talk_", "log_", "gap_", "i_spoke", "j_"),
    "line": ("i_",),
    "starts": ("starts",),
}


def family_of(name: str) -> str:
    return next(
        family
        for family, prefixes in FAMILIES.items()
        if any(name.startswith(prefix) for prefix in prefixes)
    )
