"""Evidence: the rules the validator applies when the ``evidence`` setting is on (a name must be mentioned
in its chunk, a fact's two ends must meet within a sentence window, a relation with cues needs one there).
The matching itself is :mod:`graphrag_got.common.text_match`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from graphrag_got.config import ExtractSettings


@dataclass(frozen=True)
class EvidenceRules:
    """The evidence settings the validator applies: sentence window and fuzzy mention threshold."""

    window: int = 1
    threshold: float = 0.85
    cues: bool = True  # a relation that declares cues (`indicios`) needs one where its ends meet
    direction: bool = True  # with cues: the repair swaps ends the wording states the other way round

    def __post_init__(self) -> None:
        if self.window < 0:
            raise ValueError(f"evidence window must be >= 0 sentences, got {self.window}")
        if not 0.0 < self.threshold <= 1.0:
            raise ValueError(f"mention threshold must be in (0, 1], got {self.threshold}")

    @classmethod
    def from_settings(cls, extract: "ExtractSettings") -> "EvidenceRules":
        """The rules the ``extract`` section sets."""
        return cls(window=extract.evidence_window, threshold=extract.mention_threshold,
                   cues=extract.relation_cues, direction=extract.cue_direction)
