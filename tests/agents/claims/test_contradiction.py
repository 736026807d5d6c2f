"""agents.claims.contradiction: what a rule finds.
Every case is written in new wording for these tests (no data set's sentences or names).
"""
from __future__ import annotations

import pytest

from agents.claims.contradiction import Contradiction

from .support import claim as _claim


def test_a_finding_of_a_type_the_console_does_not_know_is_refused():
    one, other = _claim("Bike hire costs £12 a day.")[0], _claim("Bike hire is £15 a day.")[0]
    assert Contradiction("price", 0.7, "£12", "£15", one, other).type == "price"
    with pytest.raises(ValueError, match="'weather'"):
        Contradiction("weather", 0.7, "£12", "£15", one, other)
