"""Conflicts shown in the console: explanations naming articles by title, and the dashboard's chart."""
from __future__ import annotations

import re
from dataclasses import dataclass


def with_titles(*, text: str, titles: dict[str, str]) -> str:
    """The text with article refs (as detectors write them) replaced by the articles' titles."""
    refs = sorted((ref for ref in titles if ref), key=len, reverse=True)
    if not refs or not text:
        return text
    pattern = re.compile(r"(?<![\w/-])(?:" + "|".join(re.escape(ref) for ref in refs) + r")(?![\w/-])")
    return pattern.sub(lambda m: f"“{titles[m.group(0)]}”", text)


def conflict_explanation(conflict) -> str:
    """A conflict's explanation naming its articles (two, or one for a one-article finding) by title."""
    return with_titles(
        text=conflict.explanation,
        titles={a.external_ref: a.title for a in (conflict.article_low, conflict.article_high) if a is not None},
    )


def with_explanations(conflicts: list) -> list:
    """The conflicts, each with `explanation_display` (conflict_explanation) for a list template."""
    for conflict in conflicts:
        conflict.explanation_display = conflict_explanation(conflict)
    return conflicts


@dataclass
class ChartBar:
    x: float
    y: float
    height: float
    width: float
    value: int
    kind: str


@dataclass
class ChartLabel:
    x: float
    text: str
    anchor: str  # SVG text-anchor: "middle" or "end"
    kind: str  # "label" or "today-label" (the CSS class)

    @property
    def span(self) -> tuple[float, float]:
        """Where the text lies on the x axis, by the chart's estimate of a label character's width."""
        width = len(self.text) * LABEL_CHAR_WIDTH
        start = self.x - width / 2 if self.anchor == "middle" else self.x - width
        return start, start + width


# Label text is 10px: a character is at most about 6px wide; labels keep this much space between them.
LABEL_CHAR_WIDTH, LABEL_GAP = 6.0, 6.0


def _day_labels(centres: list[float], texts: list[str], width: float) -> list[ChartLabel]:
    """Date labels that never overlap: "today" under the last day (kept inside the chart), then the
    earlier days from the first on, each only where it clears the one before it and "today"."""
    if not centres:
        return []
    today_width = len("today") * LABEL_CHAR_WIDTH
    today = ChartLabel(x=round(min(width, centres[-1] + today_width / 2), 1), text="today", anchor="end",
                       kind="today-label")
    labels: list[ChartLabel] = []
    for x, text in zip(centres[:-1], texts[:-1]):
        label = ChartLabel(x=x, text=text, anchor="middle", kind="label")
        start, end = label.span
        if start < 0 or end + LABEL_GAP > today.span[0]:
            continue
        if labels and start < labels[-1].span[1] + LABEL_GAP:
            continue
        labels.append(label)
    return labels + [today]


@dataclass
class Chart:
    width: int
    height: int
    plot_height: int
    bars: list[ChartBar]
    labels: list[ChartLabel]
    max_value: int
    today_x: float | None = None  # the centre of today's slot, when today is on the chart


def bar_chart(*, days, width: int = 560, height: int = 190, today=None) -> Chart:
    """Geometry for a server-rendered SVG of opened vs resolved per day (two bars per day), with room
    above the bars for their values."""
    plot_height = height - 24
    top_margin = 12
    usable = plot_height - top_margin
    max_value = max([1] + [max(d.opened, d.resolved) for d in days])
    slot = width / max(len(days), 1)
    bar_width = max(slot / 2 - 3, 2)
    bars: list[ChartBar] = []
    for i, day in enumerate(days):
        for j, (kind, value) in enumerate((("opened", day.opened), ("resolved", day.resolved))):
            bar_height = usable * value / max_value
            bars.append(
                ChartBar(
                    x=round(i * slot + 2 + j * (bar_width + 1), 1),
                    y=round(plot_height - bar_height, 1),
                    height=round(bar_height, 1),
                    width=round(bar_width, 1),
                    value=value,
                    kind=kind,
                )
            )
    labels = _day_labels([round(i * slot + slot / 2, 1) for i in range(len(days))],
                         [day.day.strftime("%d %b") for day in days], width)
    today_x = next((round(i * slot + slot / 2, 1) for i, day in enumerate(days) if day.day == today), None)
    return Chart(width=width, height=height, plot_height=plot_height, bars=bars, labels=labels, max_value=max_value,
                 today_x=today_x)
