"""Images, voice notes and videos: nothing to read locally without OCR (readers/ocr.py,
opt-in) or the owner's agent, which reads an image or transcribes a recording."""

from __future__ import annotations

from pathlib import Path

from archive.files.domain import Extracted, Limits
from archive.files.readers.base import needs_text

IMAGE = "an image: OCR or an agent can read it"
VOICE = "a voice note: an agent can transcribe it"
VIDEO = "a video: an agent can transcribe it"


def read_image(path: Path, limits: Limits) -> Extracted:
    return needs_text(IMAGE)


def read_audio(path: Path, limits: Limits) -> Extracted:
    return needs_text(VOICE)


def read_video(path: Path, limits: Limits) -> Extracted:
    return needs_text(VIDEO)
