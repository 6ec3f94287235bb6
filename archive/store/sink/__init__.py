"""THE write path for messages.

Every message, and everything that comes with it (chat and identity upserts, attachments,
edits as revisions, deletions as tombstones, the connector cursor, the changes feed), is
recorded here, one bounded batch per transaction, all or nothing. Re-delivering a message
(same account, chat and provider id) with the same content changes nothing. Nothing else
writes Message rows: the models refuse it, and a test scans the code for it.

The parts, in the order a batch passes them (`record.batch_record`):

- `cleaning`: the batch checked and cleaned, text as the store keeps it;
- `upserts`: its account, chats and identities;
- `updates`: messages already stored, brought up to the batch (revisions, tombstones);
- `inserts`: new messages, indexed set-wise;
- `public_ids`: the id an exported message or attachment brings, kept when it is free;
- `attachments`, `replies`: what hangs off a message, and replies meeting their parents;
- `outbound`: the owner's purge, sends and their delivery status;
- `repack`: raw JSON still stored as text packed afterwards (the nightly optimise).
"""

from archive.store.changes import quiet_changes
from archive.store.sink.cleaning import normalize_text
from archive.store.sink.inserts import FTS_TABLES
from archive.store.sink.outbound import delivery_set, message_purge, outbound_record
from archive.store.sink.record import batch_record
from archive.store.sink.updates import STORED_IDS_SQL

__all__ = [
    "FTS_TABLES",
    "STORED_IDS_SQL",
    "batch_record",
    "delivery_set",
    "message_purge",
    "normalize_text",
    "outbound_record",
    "quiet_changes",
]
