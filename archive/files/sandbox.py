"""Reading one file's text in a child process, bounded in time, memory and what it writes.

A hostile file (a PDF that makes its reader spin, a DOCX whose XML inflates to gigabytes)
must not hang or exhaust the worker, so `extract` forks a child that reads the file and
sends back its `Extracted`; the parent only waits. The child, before it opens the file:

- caps its address space (RLIMIT_AS) at what it inherited plus `limits.memory_bytes` (the
  forked worker already maps Django and the rest, a sum that varies from worker to worker;
  the cap is what reading may add), so a reader that swells gets MemoryError;
- caps its CPU time (RLIMIT_CPU) at ceil(`limits.seconds`) + 1, a second line behind the
  parent's wall clock, which kills the child (SIGKILL) after `limits.seconds`;
- caps every file it writes (RLIMIT_FSIZE) at `limits.file_bytes`, and writes only into a
  temporary folder of its own (TMPDIR, its working folder), removed by the parent after. A
  zero cap is not possible: a mail's attachments are read from files, and OCR (ocr.py)
  hands tesseract its page images as files. Keeping writes to that folder alone would need
  a mount namespace or Landlock: the readers only ever write through `tempfile`.

What comes back is one pickled `Extracted`, its text cut at `limits.chars` in the child, so
the parent receives a bounded message. A timeout, or a child killed by memory (MemoryError,
or SIGKILL/SIGSEGV/SIGABRT from a library that could not allocate), is `too_large` with the
limit named; a reader's exception is `failed` with one line naming its class and message.

The child is made with `os.fork` itself, as archive/imports/reading.py explains: a Celery
prefork worker is a daemonic process, to which multiprocessing refuses children. It never
touches the database and leaves with `os._exit`. Where there is no fork (not Linux or
another Unix), no file is read: `failed`, saying so.
"""

from __future__ import annotations

import contextlib
import faulthandler
import gc
import math
import os
import pickle
import resource
import shutil
import signal
import sys
import tempfile
import warnings
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path

from archive.files.domain import Extracted, Limits, TextState
from archive.files.readers.base import REASON_MOST

MIB = 1 << 20
_EXIT_MEMORY = 3  # the child ran out of memory (MemoryError)
_EXIT_BROKEN = 4  # the child could not send its answer
_MEMORY_SIGNALS = {signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS}


def _mb(limits: Limits) -> str:
    return f"{limits.memory_bytes / MIB:.0f} MB"


def _seconds(limits: Limits) -> str:
    return f"{limits.seconds:g} s"


def took_too_long(limits: Limits) -> Extracted:
    return Extracted("", TextState.TOO_LARGE, "", f"took longer than {_seconds(limits)}")


def needed_too_much(limits: Limits) -> Extracted:
    return Extracted("", TextState.TOO_LARGE, "", f"needed more than {_mb(limits)} of memory")


def failure(exc: BaseException) -> Extracted:
    """A reader's exception as one line: its class and its message (never a traceback)."""
    message = " ".join(str(exc).split())
    line = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return Extracted("", TextState.FAILED, "", line[:REASON_MOST])


def extract(path: Path, *, mime: str, name: str, limits: Limits, ocr: bool = False) -> Extracted:
    """The text of the file at `path` (sent as `mime`, called `name`), read in a child
    process within `limits`; with `ocr`, a file that needs text is given to OCR
    (readers/ocr.py) in the same child, and its reading kept if OCR finds nothing better."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        return failure(exc)
    if size > limits.file_bytes:
        return Extracted(
            "",
            TextState.TOO_LARGE,
            "",
            f"larger than {limits.file_bytes / MIB:g} MB ({size / MIB:.1f} MB): not read",
        )
    return run_bounded(lambda: _read(path, mime, name, limits, ocr), limits)


def _read(path: Path, mime: str, name: str, limits: Limits, ocr: bool) -> Extracted:
    from archive.files.readers.registry import reader_for

    kind, read = reader_for(path, mime=mime, name=name)
    reading = read(path, limits)
    if ocr and reading.state is TextState.NEEDS_TEXT and kind in ("image", "pdf"):
        # OCR is told what the file is, not what it was sent as (a JPEG called .pdf)
        if kind == "pdf":
            mime = "application/pdf"
        elif not mime.startswith("image/"):
            mime = "image/unknown"
        reading = _with_ocr(reading, path, mime, limits)
    return reading


def _with_ocr(reading: Extracted, path: Path, mime: str, limits: Limits) -> Extracted:
    """OCR's reading when it found text; else the reading as it was (with why, if OCR
    failed)."""
    try:
        from archive.files.readers.ocr import ocr_read
    except ImportError:
        return reading
    try:
        found = ocr_read(path, mime=mime, limits=limits)
    except MemoryError:
        return _noted(reading, f"OCR needed more than {_mb(limits)} of memory")
    except Exception as exc:
        return _noted(reading, f"OCR failed: {failure(exc).reason}")
    if found is None:
        return reading
    if found.state is TextState.DONE and found.text.strip():
        return found
    # OCR ran and read nothing usable: the reading stays, with OCR's why (no words, a
    # missing language, a picture too large, out of time).
    why = found.reason if found.reason.startswith("OCR") else f"OCR: {found.reason}"
    return _noted(reading, why if found.reason else "OCR found no text")


def _noted(reading: Extracted, note: str) -> Extracted:
    reason = "; ".join(part for part in (reading.reason, note) if part)[:REASON_MOST]
    return Extracted(reading.text, reading.state, reading.extractor, reason, reading.pages)


def run_bounded(read: Callable[[], Extracted], limits: Limits) -> Extracted:
    """What `read()` returns, run in a forked child within `limits` (the module's docstring
    says how); too_large or failed when it runs over them or raises."""
    if not hasattr(os, "fork"):
        return Extracted(
            "", TextState.FAILED, "", "reading files needs os.fork, which this system lacks"
        )
    folder = tempfile.mkdtemp(prefix="wirecat-read-")
    try:
        return _in_child(read, limits, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _in_child(read: Callable[[], Extracted], limits: Limits, folder: str) -> Extracted:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: bound itself, read, send, leave without any of our exit code
        code = _EXIT_BROKEN
        try:
            os.close(read_end)
            code = _child(read, limits, folder, write_end)
        finally:
            os._exit(code)
    os.close(write_end)
    receive = Connection(read_end, writable=False)
    data: bytes | None = None
    timed_out = False
    try:
        if receive.poll(limits.seconds):
            with contextlib.suppress(EOFError, OSError):
                data = receive.recv_bytes(maxlength=limits.chars * 4 + MIB)
        else:
            timed_out = True
    finally:
        receive.close()
        if timed_out:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _pid, status = os.waitpid(pid, 0)
    if timed_out:
        return took_too_long(limits)
    if data is not None:
        found: Extracted = pickle.loads(data)  # noqa: S301 - our own child, over our own pipe
        return found
    return _ended(status, limits)


def _ended(status: int, limits: Limits) -> Extracted:
    """What a child that sent nothing back ended of."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if number == signal.SIGXCPU:
            return took_too_long(limits)
        if number in _MEMORY_SIGNALS:
            return needed_too_much(limits)
        return Extracted(
            "", TextState.FAILED, "", f"the reader was stopped by {signal.Signals(number).name}"
        )
    if os.WEXITSTATUS(status) == _EXIT_MEMORY:
        return needed_too_much(limits)
    return Extracted(
        "",
        TextState.FAILED,
        "",
        f"the reader ended without an answer (exit status {os.WEXITSTATUS(status)})",
    )


def _inherited_address_space() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _limit(which: int, value: int, grace: int = 0) -> None:
    """Cap `which` at `value` (the hard cap `grace` above it), or at the cap the worker was
    started under if lower."""
    _soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
        grace = min(grace, hard - value)
    resource.setrlimit(which, (value, value + grace))


def _bound(limits: Limits, folder: str) -> None:
    _limit(resource.RLIMIT_AS, _inherited_address_space() + limits.memory_bytes)
    # SIGXCPU at the soft cap (a timeout), SIGKILL a second later if it is ignored
    _limit(resource.RLIMIT_CPU, math.ceil(limits.seconds) + 1, grace=1)
    _limit(resource.RLIMIT_FSIZE, limits.file_bytes)
    _limit(resource.RLIMIT_CORE, 0)
    os.environ["TMPDIR"] = folder
    tempfile.tempdir = folder
    os.chdir(folder)
    sys.dont_write_bytecode = True


def _child(read: Callable[[], Extracted], limits: Limits, folder: str, fd: int) -> int:
    # What the fork copied is never garbage here: freezing it keeps collections short.
    gc.freeze()
    # A crash after the memory cap is answered by the parent; no dump of it in the log, and
    # no library's warnings either.
    faulthandler.disable()
    warnings.simplefilter("ignore")
    send = Connection(fd, readable=False)
    try:
        _bound(limits, folder)
        try:
            reading = read()
        except MemoryError:
            return _EXIT_MEMORY
        except Exception as exc:
            reading = failure(exc)
        if len(reading.text) > limits.chars:
            cut = f"text cut at {limits.chars:,} characters"
            reading = _noted(
                Extracted(
                    reading.text[: limits.chars],
                    reading.state,
                    reading.extractor,
                    reading.reason,
                    reading.pages,
                ),
                cut,
            )
        send.send_bytes(pickle.dumps(reading))
        return 0
    except MemoryError:
        return _EXIT_MEMORY
    except OSError:
        return _EXIT_BROKEN  # the parent stopped listening
    finally:
        send.close()
