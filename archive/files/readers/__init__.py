"""One reader per file format, each `read_<format>(path, limits) -> Extracted`, built on
the library made for that format (registry.py says which; no hand-written parsers).

A reader trusts nothing in the file but is not itself bounded: it runs in the child process
of archive/files/sandbox.py, whose resource limits stop a file that loops or swells. Paged
formats (PDF, slides, sheets) separate their pages with a form feed, "\\f"."""
