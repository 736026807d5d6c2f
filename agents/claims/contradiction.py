"""What the rules read and what they find: two aligned claims with what is known of them, and a contradiction
between them (type, confidence, what each side says)."""
from __future__ import annotations

from dataclasses import dataclass

from agents.types import CONFLICT_TYPES

from .analysis import ClaimFacts
from .scope import Scope


@dataclass(frozen=True)
class Contradiction:
    type: str
    confidence: float
    said_a: str  # what each side says, as written
    said_b: str
    a: ClaimFacts
    b: ClaimFacts

    def __post_init__(self) -> None:
        # Findings are stored, filtered and served by these types: an unknown one would reach the console as such.
        if self.type not in CONFLICT_TYPES:
            raise ValueError(f"conflict type {self.type!r} is none of agents.types.CONFLICT_TYPES")


@dataclass(frozen=True)
class AlignedPair:
    """Two aligned claims as every rule family reads them."""

    a: ClaimFacts
    b: ClaimFacts
    similarity: float  # cosine of the masked claims
    scope_a: Scope
    scope_b: Scope
    overlap: float  # shared content words over all content words
    # Statements about different things ("Plan A is activated in the app" / "Plan B is switched on by an
    # engineer") can both hold; value rules check each value's own subject instead.
    statements_apart: bool
    near_copy: tuple[str, str, str, bool] | None  # (type, said a, said b, only a name differs), see near_copy


# What a rule family returns: (conflict type, strength before the pair's damping, said a, said b).
Finding = tuple[str, float, str, str]
