"""The papers' settings as fairseq argument files; installed as the package data ``syntrans.configs`` (see README.md here)."""
