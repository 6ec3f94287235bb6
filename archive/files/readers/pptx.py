"""PowerPoint (.pptx): python-pptx, each slide a page ("\\f" between them): the text of its
shapes (grouped ones and tables included) in the slide's order, then its speaker notes."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pptx import Presentation
from pptx.shapes.group import GroupShape

from archive.files.domain import Extracted, Limits
from archive.files.readers.base import Parts, finish, library, tidy

LIBRARY = "python-pptx"


def _shape_texts(shapes: Iterable[Any]) -> Iterator[str]:
    for shape in shapes:
        if isinstance(shape, GroupShape):
            yield from _shape_texts(shape.shapes)
        if getattr(shape, "has_text_frame", False):
            yield shape.text_frame.text
        if getattr(shape, "has_table", False):
            for row in shape.table.rows:
                yield "\t".join(" ".join(cell.text.split()) for cell in row.cells)


def read_pptx(path: Path, limits: Limits) -> Extracted:
    slides = list(Presentation(str(path)).slides)
    notes: list[str] = []
    if len(slides) > limits.pages:
        notes.append(f"read the first {limits.pages} of {len(slides)} slides")
    pages = Parts(limits)
    for slide in slides[: limits.pages]:
        texts = list(_shape_texts(slide.shapes))
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            texts.append(slide.notes_slide.notes_text_frame.text)
        if not pages.add(tidy("\n".join(texts))):
            break
    return finish(
        pages.joined("\f"),
        limits=limits,
        extractor=library(LIBRARY),
        pages=len(pages.parts),
        notes=notes,
    )
