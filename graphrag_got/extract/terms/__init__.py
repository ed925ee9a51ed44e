"""The terms extraction strategy: key terms without a model (find), the per-chunk answers and the corpus pass
(layer), types once per term (type_terms)."""
