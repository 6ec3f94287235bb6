"""Making a backup (`backup`), reading one back (`restore`), and what both agree on: the
archive's layout, its manifest and the store's own checks (`parts`)."""
