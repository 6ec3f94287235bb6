"""The owner's notes: Markdown with typed links into the archive, and backlinks."""
