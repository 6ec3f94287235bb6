"""The WireCat export: the whole archive as documented JSON Lines with the attachments'
bytes alongside (docs/export-format.md), and its re-import into a store."""
