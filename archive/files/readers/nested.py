"""A file inside a file (a mail's attachment): written to a temporary folder and read by the
reader its content calls for, one level of `limits.depth` deeper, within what is left of
`limits.chars` (`deeper`). Its text comes after a line naming it."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from archive.files.domain import Limits, TextState

_UNSAFE = re.compile(r"[^\w.\- ]+")


def header(name: str, note: str = "") -> str:
    return f"[attachment: {name}" + (f" — {note}]" if note else "]")


def attachment_text(
    data: bytes, *, name: str, mime: str, limits: Limits, folder: Path, number: int
) -> str:
    """The text of the attached file `data` (called `name`, declared `mime`), introduced by
    its name, read within `limits` (the mail's made `deeper`); a file without text (an
    image, a failure) is only named, with why."""
    from archive.files.readers.registry import reader_for  # the registry names this module

    safe = _UNSAFE.sub("_", Path(name.replace("\\", "/")).name)[-100:] or "attachment"
    target = folder / f"{number}-{safe}"
    target.write_bytes(data)
    try:
        _kind, read = reader_for(target, mime=mime, name=name)
        reading = read(target, limits)
    except MemoryError:
        raise
    except Exception as exc:  # one attachment's failure leaves the mail readable
        return header(name, f"could not be read: {type(exc).__name__}: {exc}"[:300])
    finally:
        target.unlink(missing_ok=True)
    if reading.state is TextState.DONE:
        # its pages are not the mail's pages
        return header(name) + "\n" + reading.text.replace("\f", "\n\n")
    return header(name, reading.reason or reading.state.value)


def deeper(limits: Limits, used: int) -> Limits:
    """The limits of what is attached: one level deeper, the characters left."""
    return dataclasses.replace(limits, chars=max(limits.chars - used, 0), depth=limits.depth - 1)
