"""Connectors: the only code that knows a provider's formats and protocols.

Each export format is a module here exposing `READER`, an `ExportReader` that detects its
format from the content and turns a file into provider-neutral `ImportItem`s. Readers never
touch the ORM; the import service batches their items into the single write path.
"""
