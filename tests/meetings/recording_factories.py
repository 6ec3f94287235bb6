"""Recordings for the meeting page's player: a real, silent WAV file stored as a message's
attachment through the sink (as an import stores one), and one whose bytes the export did
not include."""

from __future__ import annotations

import io
import wave

from archive.store.blobs import blob_put
from archive.store.domain import AttachmentRecord
from archive.store.models import Attachment, Message
from archive.store.sink import batch_record
from tests.factories import batch, message

RATE = 8000


def silent_wav(seconds: int = 5) -> bytes:
    """A valid PCM WAV file of `seconds` of silence (mono, 8 kHz, 16 bit)."""
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(RATE)
        wav.writeframes(b"\0\0" * RATE * seconds)
    return out.getvalue()


def stored_recording(
    external_id: str = "rec-1",
    *,
    file_name: str = "standup.wav",
    mime_type: str = "audio/wav",
    stored: bool = True,
    minutes: int = 0,
) -> Attachment:
    """An attachment of a new message from "alice" `minutes` after tests.factories.T0;
    its bytes stored (a 5-second silent WAV) unless `stored` is False."""
    record = AttachmentRecord(external_id="a", file_name=file_name, mime_type=mime_type)
    if stored:
        blob = blob_put(io.BytesIO(silent_wav()))
        record = AttachmentRecord(
            external_id="a",
            file_name=file_name,
            mime_type=mime_type,
            size=blob.size,
            sha256=blob.sha256,
            blob_path=blob.path,
        )
    batch_record(
        batch=batch(message(external_id, "the recording", minutes=minutes, attachments=(record,)))
    )
    found = Message.objects.get(external_id=external_id)
    return Attachment.objects.get(message=found)
