"""The text of files: every stored attachment read locally (or by the owner's agent), kept
as one text row per attachment and searchable with `content:`."""
