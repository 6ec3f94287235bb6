"""EPUB: EbookLib opens the book, each document of its spine (in reading order) is HTML whose
text selectolax reads (html.py)."""

from __future__ import annotations

import warnings
from pathlib import Path

import ebooklib
from ebooklib import epub

from archive.files.domain import Extracted, Limits
from archive.files.readers.base import Parts, finish, library
from archive.files.readers.html import html_text
from archive.files.readers.text import decode

LIBRARY = "EbookLib"


def read_epub(path: Path, limits: Limits) -> Extracted:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # EbookLib warns of its own future defaults
        book = epub.read_epub(str(path), options={"ignore_ncx": True})
    documents = [book.get_item_with_id(idref) for idref, _linear in book.spine]
    if not any(documents):  # no spine: every document, in the manifest's order
        documents = list(book.get_items_of_type(ebooklib.ITEM_DOCUMENT))
    chapters = Parts(limits)
    for item in documents:
        if item is None or item.get_type() != ebooklib.ITEM_DOCUMENT or not item.is_chapter():
            continue  # the navigation document repeats the chapters' titles
        text = html_text(decode(item.get_content()))
        if text and not chapters.add(text):
            break
    return finish(chapters.joined("\n\n"), limits=limits, extractor=library(LIBRARY))
