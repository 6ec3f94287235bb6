"""The archive's capabilities, in the order their pages and routes are composed.

Each is a package `archive/<name>/` holding what it needs of models, services,
selectors, views, api, schemas, jobs and admin (ARCHITECTURE.md says what each may touch).
"""

CAPABILITIES = (
    "store",
    "owner",
    "imports",
    "search",
    "tags",
    "people",
    "gateway",
    "sync",
    "files",
    "conversations",
    "meaning",
    "backups",
)
