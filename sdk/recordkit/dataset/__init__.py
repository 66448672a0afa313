"""A dataset on disk: the ``dataset.json`` manifest and where a record's bytes go."""
