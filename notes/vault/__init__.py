"""The notes as a folder of Markdown files (an Obsidian-style vault): export and import.

A note is `<folder path>/<title>.md`: YAML front matter, then the body exactly as stored
(its `[[links]]` and `#tags` as written). The front matter holds `id` (the note's public id),
`title` (only when the file name cannot say it: a character no file system allows, a second
note of one title), `aliases`, `tags`, `created` and `updated` (ISO 8601, UTC, to the
second), `author` (when an agent wrote it) and `links` (the links made by hand: a typed
reference, a kind, a sentence). Exporting, then importing, changes nothing.

Export writes into an empty folder or one an earlier export made (the marker file says so
and lists what it wrote, with each file's digest): every file atomically (a temporary file,
then a rename), a file unchanged left as it is, a file of a note since deleted or renamed
removed. A file changed on disk since it was written, or one WireCat never wrote, in the
way of the export refuses it whole, naming the files: nothing written over is lost.

Import:

1. Read and check every file first: the front matter (YAML: a mapping), sizes, UTF-8, the
   `id` (a note id, one file each), folders (names a folder can have), tags, links, and
   whether the note changed in WireCat after the file was exported (its `updated`). Any
   problem refuses the whole vault, naming each file and what is wrong: a refused vault
   writes nothing.
2. Then write the changes, BATCH files to a transaction (quiet: in the changes feed, told
   to no webhook), so that a large vault never holds the store's write lock for long (one
   transaction for 5,000 notes would hold it for a minute, failing the pages' and the
   worker's writes). Each note is written whole. What checking cannot foresee (a file
   changed during the import, a save the services refuse) stops the import, naming the
   file, with its batch rolled back and the batches before it kept: the same import again
   finishes the rest (the notes written already are unchanged then).

Which note a file is: the note of its `id` (made with that id when the store has none), or,
for a file without one (a vault Obsidian made), the note of the same title, in any case, in
the same folder, when exactly one note is; otherwise a new note. Source files are never
written to, so re-importing a vault without ids changes nothing either; a note renamed on
one side becomes a new note on the next import unless its file carries the `id` an export
writes. A file's folder is its directory; its title its name without `.md`, unless the
front matter gives `title`. Tags are the front matter's and the `#tags` of the body outside
code (Obsidian's), less a tag taken off the note in WireCat while its text still says it;
the file's tags and links are all of the note's (one removed from the file is removed from
the note). Symbolic links are never followed, dot files and folders (`.obsidian/`,
`.trash/`) are skipped.
"""

from notes.vault.disk import VaultFileError
from notes.vault.exporting import vault_export
from notes.vault.frontmatter import (
    FILE_BYTES_MAX,
    FRONT_MATTER_MAX,
    LINKS_MAX,
    TAGS_MAX,
    inline_tags,
)
from notes.vault.importing import vault_import
from notes.vault.marker import MARKER
from notes.vault.names import NAME_BYTES_MAX, NAME_CHARS_MAX, safe_name
from notes.vault.results import ExportResult, ImportResult, Progress

# The bounds a test lowers (walking.FILES_MAX, importing.BATCH) are read where they are
# used: patch them there, not here.
__all__ = [
    "FILE_BYTES_MAX",
    "FRONT_MATTER_MAX",
    "LINKS_MAX",
    "MARKER",
    "NAME_BYTES_MAX",
    "NAME_CHARS_MAX",
    "TAGS_MAX",
    "ExportResult",
    "ImportResult",
    "Progress",
    "VaultFileError",
    "inline_tags",
    "safe_name",
    "vault_export",
    "vault_import",
]
