"""The conflicts app's TextChoices, for templates to compare against (`{% if c.status == ConflictStatus.OPEN %}`)
instead of spelling a stored value."""
from conflicts.models import (
    ActivityKind,
    Citation,
    ConflictCheckStatus,
    ConflictStatus,
    ConflictSubstatus,
    DeliveryStatus,
    SuggestionStatus,
)


def choices(request) -> dict:
    return {
        "ActivityKind": ActivityKind,
        "Citation": Citation,
        "ConflictCheckStatus": ConflictCheckStatus,
        "ConflictStatus": ConflictStatus,
        "ConflictSubstatus": ConflictSubstatus,
        "DeliveryStatus": DeliveryStatus,
        "SuggestionStatus": SuggestionStatus,
    }
