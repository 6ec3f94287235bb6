from django.db.backends.sqlite3.features import DatabaseFeatures as SQLiteFeatures


class DatabaseFeatures(SQLiteFeatures):
    # The bundled driver lacks Connection.getlimit(); its SQLite is compiled with
    # SQLITE_MAX_VARIABLE_NUMBER far above this, so a generous fixed value is safe.
    max_query_params = 32766
