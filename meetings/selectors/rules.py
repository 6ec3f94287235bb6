"""A recurrence rule in plain words ("every week on Tuesday"), or as written when it is
not a simple one."""

from __future__ import annotations

import re
from datetime import datetime

# --- a rule in plain words ---------------------------------------------------------------------

_FREQ = {"DAILY": "day", "WEEKLY": "week", "MONTHLY": "month", "YEARLY": "year"}
_DAYS = {
    "MO": "Monday",
    "TU": "Tuesday",
    "WE": "Wednesday",
    "TH": "Thursday",
    "FR": "Friday",
    "SA": "Saturday",
    "SU": "Sunday",
}
_NTH = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth", -1: "last"}
_SIMPLE = {"FREQ", "INTERVAL", "BYDAY", "BYMONTHDAY", "COUNT", "UNTIL", "WKST"}
_BYDAY = re.compile(r"^([+-]?\d{1,2})?(MO|TU|WE|TH|FR|SA|SU)$")


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def rrule_text(rule: str) -> str:
    """An RRULE in plain words when it is a simple one ("every week on Tuesday"), else the
    rule as written; "" for no rule."""
    rule = rule.strip()
    if rule.upper().startswith("RRULE:"):
        rule = rule[6:]
    if not rule:
        return ""
    try:
        parts = dict(part.split("=", 1) for part in rule.upper().split(";") if part)
    except ValueError:
        return rule
    freq = parts.get("FREQ", "")
    if freq not in _FREQ or not set(parts) <= _SIMPLE:
        return rule
    interval = parts.get("INTERVAL", "1")
    if not interval.isdigit() or int(interval) < 1:
        return rule
    unit = _FREQ[freq]
    words = f"every {unit}" if interval == "1" else f"every {int(interval)} {unit}s"
    if "BYDAY" in parts:
        days: list[str] = []
        for token in parts["BYDAY"].split(","):
            found = _BYDAY.match(token)
            if found is None:
                return rule
            nth, name = found.groups()
            if nth:
                if int(nth) not in _NTH or freq not in ("MONTHLY", "YEARLY"):
                    return rule
                days.append(f"the {_NTH[int(nth)]} {_DAYS[name]}")
            else:
                days.append(_DAYS[name])
        if set(parts["BYDAY"].split(",")) == {"MO", "TU", "WE", "TH", "FR"} and freq == "WEEKLY":
            words += " on weekdays"
        else:
            words += " on " + _and(days)
    if "BYMONTHDAY" in parts:
        numbers = parts["BYMONTHDAY"].split(",")
        if not all(n.lstrip("-").isdigit() for n in numbers):
            return rule
        named = ["the last day" if n == "-1" else f"day {int(n)}" for n in numbers]
        words += " on " + _and(named)
    if "COUNT" in parts:
        if not parts["COUNT"].isdigit():
            return rule
        count = int(parts["COUNT"])
        words += ", once" if count == 1 else f", {count} times"
    if "UNTIL" in parts:
        until = parts["UNTIL"][:8]
        try:
            words += f", until {datetime.strptime(until, '%Y%m%d'):%-d %B %Y}"
        except ValueError:
            return rule
    return words
