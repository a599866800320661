"""What `kit init` writes into a repository (kit/commands/init.py): the files, as package data."""
