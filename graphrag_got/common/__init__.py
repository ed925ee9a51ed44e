"""Small helpers every stage uses: atomic files, name normalization, text sanitizing, progress events."""
