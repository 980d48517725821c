"""Checkpoints: reading, load planning, writing, updating in place, references and files."""
