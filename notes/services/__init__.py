"""The notes use cases, the only writers of notes, folders and links: notes.py, links.py,
folders.py, and targets.py (what a reference or a written name stands for)."""
