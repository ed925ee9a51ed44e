"""The ``classify`` extraction strategy: spans of the chunk, then one scored choice per pair of mentions."""
