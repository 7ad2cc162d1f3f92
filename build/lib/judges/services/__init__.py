"""Writes of the judges app. Import from the submodules: configs, runs, gold, files, doubt."""
