"""The archive app's models, as Django loads them.

Each capability keeps its models in its own package (`archive/<capability>/models.py`);
this module only imports them so Django registers them under the one app label
`archive` (table names and migrations stay those of the single app). Code imports a
model from its capability's module, never from here.
"""

from archive.backups.models import *  # noqa: F403
from archive.conversations.models import *  # noqa: F403
from archive.files.models import *  # noqa: F403
from archive.gateway.models import *  # noqa: F403
from archive.imports.models import *  # noqa: F403
from archive.meaning.models import *  # noqa: F403
from archive.owner.models import *  # noqa: F403
from archive.people.models import *  # noqa: F403
from archive.search.models import *  # noqa: F403
from archive.store.models import *  # noqa: F403
from archive.sync.models import *  # noqa: F403
from archive.tags.models import *  # noqa: F403
