"""Ingest: reading a corpus or a Markdown vault and cutting it into chunks."""
