"""Search settings (the stemming languages in use) and saved and recorded searches."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models


class SearchConfig(models.Model):
    """The store's search settings (one row). Changing the stemmers rebuilds the stems
    index; `stems_analyzer` records the analyzer the index was built with."""

    latin_stemmers = models.CharField(
        max_length=200,
        default="english",
        help_text="Snowball stemmers for words in Latin script, comma-separated "
        "(e.g. english,spanish). Cyrillic words are always stemmed as Russian.",
    )
    stems_analyzer = models.CharField(max_length=300, blank=True, editable=False)
    # The highest message id when the typo vocabulary was last rebuilt.
    vocabulary_through = models.IntegerField(default=0, editable=False)

    class Meta:
        verbose_name = "search settings"
        verbose_name_plural = "search settings"

    def __str__(self) -> str:
        return f"stemmers: {self.latin_stemmers}"

    def clean(self) -> None:
        from archive.search.analyzer import latin_choices

        try:
            latin_choices(self.latin_stemmers)
        except ValueError as exc:
            raise ValidationError({"latin_stemmers": str(exc)}) from exc


class SavedSearch(models.Model):
    """A search's parameters, never its results. Unnamed rows are the recorded history
    (identical runs counted on one row, the newest 1,000 kept); a named row is a saved
    search, parsed again on every run."""

    name = models.CharField(max_length=100, blank=True, db_index=True)
    query = models.TextField()
    sort = models.CharField(max_length=16, default="relevance")
    run_count = models.PositiveIntegerField(default=0)
    first_run_at = models.DateTimeField(auto_now_add=True)
    last_run_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-last_run_at",)
        verbose_name_plural = "saved searches"
        indexes = [models.Index(fields=["name", "-last_run_at"], name="saved_search_recent_idx")]
        constraints = [
            models.UniqueConstraint(
                fields=["name"], condition=~models.Q(name=""), name="saved_search_unique_name"
            ),
            models.UniqueConstraint(
                fields=["query", "sort"],
                condition=models.Q(name=""),
                name="recorded_search_unique_run",
            ),
        ]

    def __str__(self) -> str:
        return self.name or self.query
