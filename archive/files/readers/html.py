"""HTML: the text of its body, scripts and styles dropped, blocks on lines of their own,
parsed by selectolax (the lexbor engine, which reads whatever browsers read)."""

from __future__ import annotations

from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

from archive.files.domain import Extracted, Limits
from archive.files.readers.base import finish, library, tidy
from archive.files.readers.text import decode

LIBRARY = "selectolax"

_DROPPED = ["script", "style", "noscript", "template", "svg", "object", "iframe"]
# Elements that end a line; without the break, "<p>a</p><p>b</p>" would read "ab".
_BLOCKS = (
    "p,div,br,li,dt,dd,tr,h1,h2,h3,h4,h5,h6,table,section,article,header,footer,aside,"
    "blockquote,pre,hr,address,figure,figcaption,nav,main,form,fieldset,legend"
)
_CELLS = "td,th"


def html_text(markup: str) -> str:
    """The words of an HTML document's body, one block to a line."""
    tree = LexborHTMLParser(markup)
    tree.strip_tags(_DROPPED)
    body = tree.body
    if body is None:
        return ""
    for node in body.css(_CELLS):
        node.insert_after(" ")
    for node in body.css(_BLOCKS):
        node.insert_after("\n")
    return tidy(body.text(separator="", strip=False))


def read_html(path: Path, limits: Limits) -> Extracted:
    text = html_text(decode(path.read_bytes()))
    return finish(text, limits=limits, extractor=library(LIBRARY))
