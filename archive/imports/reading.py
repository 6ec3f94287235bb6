"""Reading an export in a child process while this one writes.

Parsing an export is pure Python and costs about as much as writing what it yields, so an
import reads in a forked child and records in the parent: the two cores of a small
machine both work. The child iterates the already opened `ExportStream` (fork copies it)
and sends items over a pipe in chunks, each with how far it has read and the reader's skip
counts at that point. The pipe is bounded by the kernel: the child waits while the parent
writes, so memory stays flat whatever the export's size. A chunk holds at most
CHUNK_ITEMS items and about CHUNK_BYTES of text, and a message whose text (or source JSON)
is longer than WIRECAT_IMPORT_MAX_TEXT crosses the pipe as its first part, the whole of it
set aside in a spill file that the import stages like an attachment (`item_kept_whole`,
archive/connectors/limits.py); what the child set aside and nobody staged is swept when
the import ends.

The child never touches the database (connectors never do) and leaves with `os._exit`,
so nothing of the parent's connection is closed or flushed from it. It is made with
`os.fork` itself: multiprocessing refuses children to a daemonic process, which is what a
Celery prefork worker is. A reader error is sent
as it was raised and raised again in the parent at the same place in the stream. If the
parent dies the child's next send fails and it ends. Where a child cannot be started
(no `fork`), or `in_child` is off (`WIRECAT_IMPORT_READER_PROCESS=0`), the stream is read
in this process.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import pickle
import queue
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection

from archive.connectors.base import (
    ExportStream,
    ImportItem,
    import_limits,
    item_kept_whole,
    item_weight,
    spill_sweep,
)

log = logging.getLogger(__name__)

CHUNK_ITEMS = 500
CHUNK_BYTES = 4 << 20  # about this much text per chunk at most (long texts are cut first)
QUEUE_CHUNKS = 16  # at most this many chunks wait in the parent (8,000 items)
_POLL_SECONDS = 0.1


@dataclass
class _Chunk:
    items: list[ImportItem]
    read: int  # items the reader has yielded so far, these included
    skipped: dict[str, int]
    error: BaseException | None = None
    last: bool = False


@dataclass
class ExportItems:
    """The items of `stream` after the first `skip`, read in a child process.

    `read` counts every item the reader yielded (the skipped ones included) up to the last
    one handed out; `skipped` is the reader's skip counts at that point.
    """

    stream: ExportStream
    skip: int = 0
    in_child: bool = True  # False: read in this process
    read: int = 0
    skipped: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._pid: int | None = None
        self._conn: Connection | None = None
        self._pump: threading.Thread | None = None
        self._stop = threading.Event()
        self._spiller: int | None = None  # the process whose spill files are ours to sweep

    def __iter__(self) -> Iterator[ImportItem]:
        if self.in_child and hasattr(os, "fork"):
            try:
                return self._from_child()
            except OSError as exc:
                log.info("reading in-process: no child process (%s)", exc)
        return self._in_process()

    def _in_process(self) -> Iterator[ImportItem]:
        self._spiller = os.getpid()
        limits = import_limits()  # once: the settings are read per call
        try:
            for item in self.stream.items:
                self.read += 1
                self.skipped = dict(self.stream.skipped)
                if self.read > self.skip:
                    yield item_kept_whole(item, limits)
        finally:  # what the reader skipped after its last item, or before its error
            self.skipped = dict(self.stream.skipped)

    def _from_child(self) -> Iterator[ImportItem]:
        # os.fork, not multiprocessing: a Celery prefork worker is a daemonic process, and
        # multiprocessing refuses children to those.
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: read, send, leave without running any of our exit code
            try:
                os.close(read_end)
                _child(self.stream, self.skip, Connection(write_end, readable=False))
            finally:
                os._exit(0)
        os.close(write_end)
        receive = Connection(read_end, writable=False)
        self._pid, self._conn, self._spiller = pid, receive, pid
        # A pipe holds 64 KB, less than one chunk: drained only when the writer wants the
        # next item, the child would mostly wait. A thread (blocked in read(), without the
        # GIL) keeps up to QUEUE_CHUNKS chunks in hand so the child reads on meanwhile.
        chunks: queue.Queue[bytes | None] = queue.Queue(maxsize=QUEUE_CHUNKS)
        pump = threading.Thread(
            target=_pump, args=(receive, chunks, self._stop), name="wirecat-pipe", daemon=True
        )
        pump.start()
        self._pump = pump
        return self._chunks(chunks)

    def child_alive(self) -> bool:
        """Whether the reader's child process is still running (False when there is none)."""
        if self._pid is None:
            return False
        try:
            pid, _ = os.waitpid(self._pid, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True
        self._pid = None  # reaped just now
        return False

    def _chunks(self, chunks: queue.Queue[bytes | None]) -> Iterator[ImportItem]:
        while True:
            data = chunks.get()
            if data is None:
                raise OSError("the export's reader process ended without finishing")
            chunk: _Chunk = pickle.loads(data)  # noqa: S301 - our own child, over our own pipe
            start = chunk.read - len(chunk.items)
            for offset, item in enumerate(chunk.items, start=1):
                self.read = start + offset
                yield item
            self.read = chunk.read
            self.skipped = chunk.skipped
            if chunk.error is not None:
                raise chunk.error
            if chunk.last:
                return

    def close(self) -> None:
        """Stop the child (if it is still reading), reap it and end the pipe's thread."""
        if self._pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)  # it holds nothing that needs tidying
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self._pid, 0)
            self._pid = None
        if self._pump is not None:
            self._stop.set()
            self._pump.join()
            self._pump = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._spiller is not None:
            spill_sweep(self._spiller)
            self._spiller = None


def _pump(receive: Connection, chunks: queue.Queue[bytes | None], stop: threading.Event) -> None:
    """Move the child's chunks from the pipe into `chunks` until it ends or `stop`."""
    while not stop.is_set():
        try:
            if not receive.poll(_POLL_SECONDS):
                continue
            data: bytes | None = receive.recv_bytes()
        except (EOFError, OSError):
            data = None
        while not stop.is_set():
            try:
                chunks.put(data, timeout=_POLL_SECONDS)
                break
            except queue.Full:
                continue
        if data is None:
            return


def _child(stream: ExportStream, skip: int, send: Connection) -> None:
    # What the fork copied (Django, the parent's import) is never garbage here: freezing it
    # keeps each collection to the records just read.
    gc.freeze()
    read = 0
    items: list[ImportItem] = []
    weight = 0
    limits = import_limits()  # once: the settings are read per call
    try:
        try:
            for item in stream.items:
                read += 1
                if read <= skip:
                    continue
                item = item_kept_whole(item, limits)
                items.append(item)
                weight += item_weight(item)
                if len(items) >= CHUNK_ITEMS or weight >= CHUNK_BYTES:
                    send.send(_Chunk(items, read, dict(stream.skipped)))
                    items, weight = [], 0
        except Exception as exc:  # raised again in the parent, where it happened
            send.send(_Chunk(items, read, dict(stream.skipped), error=_portable(exc), last=True))
            return
        send.send(_Chunk(items, read, dict(stream.skipped), last=True))
    except OSError:
        pass  # the parent stopped listening (cancelled, failed or killed): nothing to do
    finally:
        send.close()


def _portable(exc: Exception) -> BaseException:
    """The exception itself when it survives pickling, else one that says what it was."""
    try:
        pickle.loads(pickle.dumps(exc))  # noqa: S301 - a round trip of our own object
    except Exception:
        return OSError(f"{type(exc).__name__}: {exc}")
    return exc
