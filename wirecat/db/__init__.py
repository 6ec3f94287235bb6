"""WireCat's SQLite backend: a bundled modern SQLite, checked once per process for what the
schema needs, with WAL, foreign keys, a busy timeout and IMMEDIATE transactions on every
connection."""
