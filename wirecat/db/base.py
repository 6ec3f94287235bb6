"""The Django database backend `wirecat.db`.

Django's SQLite backend calls its *module-global* `Database.connect`, so setting a
`Database` class attribute alone would silently keep the interpreter's SQLite; this backend
overrides the connection factory itself and brings its own cursor class (the driver's
cursor type differs from the stdlib's).
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Iterable, Mapping
from itertools import tee
from pathlib import Path
from typing import Any
from urllib.request import pathname2url

from django.db.backends.sqlite3 import base as sqlite_base
from django.db.backends.sqlite3._functions import register as register_functions
from django.db.utils import DatabaseErrorWrapper
from django.utils.asyncio import async_unsafe
from django.utils.dateparse import parse_date, parse_datetime, parse_time
from django.utils.functional import cached_property

from wirecat.db.capabilities import ensure_capabilities
from wirecat.db.driver import Database
from wirecat.db.faults import database_fault, read_only, writable
from wirecat.db.features import DatabaseFeatures

BUSY_TIMEOUT_MS = 10_000

# Per-connection settings (the issue of record: WAL for concurrent readers, foreign keys
# enforced, a writer waits instead of failing, fsync at checkpoints only).
CONNECTION_PRAGMAS = (
    "PRAGMA journal_mode = WAL",
    "PRAGMA foreign_keys = ON",
    f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}",
    "PRAGMA synchronous = NORMAL",
    "PRAGMA legacy_alter_table = OFF",
    "PRAGMA temp_store = MEMORY",
)


def _decoder(conv_func: Any) -> Any:
    return lambda s: conv_func(s.decode())


def _adapt_date(value: datetime.date) -> str:
    return value.isoformat()


def _adapt_datetime(value: datetime.datetime) -> str:
    return value.isoformat(" ")


Database.register_converter("bool", b"1".__eq__)
Database.register_converter("date", _decoder(parse_date))
Database.register_converter("time", _decoder(parse_time))
Database.register_converter("datetime", _decoder(parse_datetime))
Database.register_converter("timestamp", _decoder(parse_datetime))
Database.register_adapter(decimal.Decimal, str)
Database.register_adapter(datetime.date, _adapt_date)
Database.register_adapter(datetime.datetime, _adapt_datetime)


class CursorWrapper(Database.Cursor):  # type: ignore[name-defined]
    """Django speaks "format"/"pyformat" parameters; SQLite wants "qmark"/"named"."""

    def execute(self, query: str, params: Any = None) -> Any:
        if params is None:
            return super().execute(query)
        names = list(params) if isinstance(params, Mapping) else None
        return super().execute(self.convert_query(query, param_names=names), params)

    def executemany(self, query: str, param_list: Iterable[Any]) -> Any:
        peek, param_list = tee(iter(param_list))
        first = next(peek, None)
        names = list(first) if first and isinstance(first, Mapping) else None
        return super().executemany(self.convert_query(query, param_names=names), param_list)

    def convert_query(self, query: str, *, param_names: list[str] | None = None) -> str:
        if param_names is None:
            return sqlite_base.FORMAT_QMARK_REGEX.sub("?", query).replace("%%", "%")
        return query % {name: f":{name}" for name in param_names}


def read_only_uri(path: Path) -> str | None:
    """The URI that opens the store at `path` for reading only, when this process may not
    write it or its folder (None: it may). A WAL-mode store needs its `-wal` and `-shm`
    beside it to be read with `mode=ro`; without a `-wal` (closed cleanly, everything in
    the main file) `immutable=1` reads it without them and without any lock: nothing can
    write a file in a read-only folder. A store that does not exist yet in a folder that
    cannot be written is StoreReadOnly at once."""
    folder = path.parent
    if not path.exists():
        if folder.is_dir() and not writable(folder):
            raise read_only(path)
        return None
    if writable(path) and writable(folder):
        return None
    mode = "mode=ro" if Path(f"{path}-wal").exists() else "immutable=1"
    return f"file:{pathname2url(str(path))}?{mode}"


def load_vectors(conn: Any) -> None:
    """sqlite-vec (`vec0` tables, `vec_distance_cosine`), the meaning index's vectors'
    exact search, loaded into every connection. Extension loading is switched on only for
    the one call."""
    import sqlite_vec

    conn.enable_load_extension(True)
    try:
        sqlite_vec.load(conn)
    finally:
        conn.enable_load_extension(False)


class FaultErrors(DatabaseErrorWrapper):
    """Django's wrapping of driver errors, but a read-only store, a full disk or a store
    without its tables becomes its StoreFault (wirecat/db/faults.py): one sentence saying
    what, where and what to do, still an OperationalError to whoever catches those."""

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        if exc_type is not None and issubclass(exc_type, Database.Error):
            wrapper: Any = self.wrapper  # type: ignore[attr-defined]
            database = Path(str(wrapper.settings_dict["NAME"]))
            fault = database_fault(exc_value, database, wrapper.connection)
            if fault is not None:
                wrapper.errors_occurred = True
                raise fault.with_traceback(traceback) from exc_value
        super().__exit__(exc_type, exc_value, traceback)


class DatabaseWrapper(sqlite_base.DatabaseWrapper):
    vendor = "sqlite"
    display_name = "SQLite (WireCat)"
    Database = Database
    features_class = DatabaseFeatures
    transaction_mode: str | None
    init_commands: list[str]
    # Opened for reading only (the store or its folder is not writable): see read_only_uri.
    read_only = False

    @cached_property
    def wrap_database_errors(self) -> DatabaseErrorWrapper:
        return FaultErrors(self)

    def get_connection_params(self) -> dict[str, Any]:
        params: dict[str, Any] = super().get_connection_params()
        params["detect_types"] = Database.PARSE_DECLTYPES | Database.PARSE_COLNAMES
        if self.transaction_mode is None:
            # Read-then-write under contention fails with "database is locked" in DEFERRED
            # mode whatever the busy timeout; every write transaction takes the lock first.
            self.transaction_mode = "IMMEDIATE"
        return params

    @async_unsafe
    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        ensure_capabilities(Database)
        params = dict(conn_params)
        name = str(params.get("database", ""))
        uri = None
        if name and name != ":memory:" and not name.startswith("file:"):
            uri = read_only_uri(Path(name))
        self.read_only = uri is not None
        if uri is not None:
            params.update(database=uri, uri=True)
        conn = Database.connect(**params)
        register_functions(conn)
        load_vectors(conn)
        for pragma in CONNECTION_PRAGMAS:
            if self.read_only and pragma.startswith("PRAGMA journal_mode"):
                continue  # a write: the store keeps the mode it was made with
            conn.execute(pragma)
        for command in self.init_commands:
            if command := command.strip():
                conn.execute(command)
        return conn

    def create_cursor(self, name: str | None = None) -> Any:
        return self.connection.cursor(factory=CursorWrapper)

    def get_database_version(self) -> tuple[int, ...]:
        return tuple(Database.sqlite_version_info)
