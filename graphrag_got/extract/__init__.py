"""Extract: from chunks to a validated `Extraction` (LLM answers, answer forms, repair, validation,
evidence, resolution, orphans, verification, the cache)."""
