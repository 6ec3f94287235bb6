"""HTML to text: the readable text of an HTML mail body (tags dropped, script and style
skipped; nothing is executed or fetched)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

_BLOCK_TAGS = (
    "address article aside blockquote br dd div dl dt figcaption figure footer form h1 h2 h3 h4 "
    "h5 h6 header hr li main nav ol p pre section table tr ul"
)


class _HtmlText(HTMLParser):
    """Readable text of an HTML body. Parses only: nothing is run or fetched."""

    _SKIP = frozenset({"script", "style", "title", "noscript", "template", "xml", "svg"})
    _BLOCK = frozenset(_BLOCK_TAGS.split())

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._parts: list[str] = []
        self._skip = 0
        self._pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skip += 1
        elif tag in self._BLOCK:
            self._parts.append("\n")
            if tag == "pre":
                self._pre += 1
        elif tag in ("td", "th"):
            self._parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag in self._BLOCK:
            self._parts.append("\n")
            if tag == "pre":
                self._pre = max(0, self._pre - 1)

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        self._parts.append(data if self._pre else re.sub(r"\s+", " ", data))

    def text(self) -> str:
        return _tidy_lines("".join(self._parts))


def _tidy_lines(text: str) -> str:
    lines = [line.strip() for line in text.replace("\xa0", " ").split("\n")]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


def html_to_text(html: str) -> str:
    parser = _HtmlText()
    try:
        parser.feed(html)
        parser.close()
        return parser.text()
    except Exception:  # a malformed page: fall back to dropping tags
        stripped = re.sub(r"(?is)<(script|style)\b.*?</\1\s*>", " ", html)
        stripped = re.sub(r"(?i)<br\s*/?>|</p\s*>|</div\s*>", "\n", stripped)
        return _tidy_lines(re.sub(r"<[^>]*>", " ", stripped))
