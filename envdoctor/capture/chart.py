"""The memory timeline as pictures: a compact text chart for the terminal and a PNG for the report.

Both draw the same series: the tree's summed RSS and each GPU's used memory, against the limits the
command lived under (RLIMIT_AS, cgroup limit, GPU capacity), so "it grew until it hit the wall" is
visible at a glance. When RSS grows steadily and more than a start-up ramp (facts/run_growth.py), both add the fitted trend: the
text chart the caption the verdict shows too (facts/run_describe.py: "RSS grows 12 MiB/min; reaches
the 2.0 GiB address-space limit at ~6 min"), the PNG a dashed line along the trend, on to the limit
when it is met within the picture's time.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from envdoctor.capture.png import Canvas, text_width
from envdoctor.facts.run_describe import amount, growth_caption
from envdoctor.facts.run_growth import more_than_a_ramp, steady_growth, trend_at

BARS = "▁▂▃▄▅▆▇█"
Series = Tuple[str, List[Tuple[float, int]], Optional[int]]  # label, (t, bytes) points, its limit

COLORS = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (148, 103, 189), (140, 86, 75)]
LIMIT_COLOR, AXIS, GRID, INK = (214, 39, 40), (90, 90, 90), (225, 225, 225), (40, 40, 40)
TREND_COLOR = (120, 120, 120)


def series(run: dict) -> List[Series]:
    """RSS (with the tightest host limit) and each GPU's used memory (with its capacity)."""
    memory = run.get("memory") or {}
    limits = [memory.get("address_space_limit_bytes")] + [c.get("limit_bytes") for c in memory.get("cgroups", ())]
    limits = [limit for limit in limits if limit]
    found: List[Series] = [("RSS", [(s["t"], s["rss_bytes"]) for s in memory.get("samples", ())], min(limits) if limits else None)]
    gpu = run.get("gpu") or {}
    for device in gpu.get("devices") or ():
        index = device["index"]
        points = [(s["t"], s["gpu_used_bytes"][index]) for s in gpu.get("samples", ()) if index < len(s["gpu_used_bytes"])]
        found.append((f"GPU{index}", points, device.get("total_bytes")))
    return [s for s in found if s[1]]


def drawn_growth(run: dict) -> Optional[dict]:
    """The steady growth worth a trend line: more than a start-up ramp."""
    growth = steady_growth(run.get("memory") or {})
    return growth if growth and more_than_a_ramp(growth) else None


def columns(points: List[Tuple[float, int]], duration: float, width: int) -> List[Optional[int]]:
    """The highest value in each of `width` equal time slices (None where no sample fell)."""
    slots: List[Optional[int]] = [None] * width
    for t, value in points:
        slot = min(width - 1, int(t / duration * width)) if duration > 0 else 0
        slots[slot] = value if slots[slot] is None else max(slots[slot], value)
    return slots


def text_chart(run: dict, width: int = 48) -> List[str]:
    """One line per series: a bar sparkline scaled to its limit (or its peak), then peak and limit."""
    lines = []
    duration = max(run.get("duration_s") or 0.0, 1e-6)
    for label, points, limit in series(run):
        peak = max(value for _, value in points)
        top = max(limit or 0, peak) or 1
        slots = columns(points, duration, width)
        bars, last = [], 0
        for value in slots:
            last = last if value is None else value
            bars.append(BARS[min(len(BARS) - 1, int(last / top * (len(BARS) - 1) + 0.5))])
        limit_text = f" of {amount(limit)}" if limit else ""
        lines.append(f"{label:<5} {''.join(bars)} peak {amount(peak)}{limit_text}")
    growth = drawn_growth(run) if lines else None
    if growth:
        lines.append(f"{'':<5} {growth_caption(growth)}")
    return lines


def picture(run: dict, width: int = 720, height: int = 320) -> Optional[bytes]:
    """A PNG of the memory timeline, or None when nothing was sampled."""
    drawn = series(run)
    if not drawn:
        return None
    left, right, top, bottom = 90, 20, 40, 40
    canvas = Canvas(width, height)
    plot_w, plot_h = width - left - right, height - top - bottom
    duration = max(run.get("duration_s") or 0.0, max(t for _, points, _ in drawn for t, _ in points), 1e-6)
    ceiling = 1.08 * max(max(v for _, p, limit in drawn for _, v in p), max((limit or 0) for _, _, limit in drawn)) or 1

    def x_of(t: float) -> int:
        return left + int(t / duration * plot_w)

    def y_of(value: float) -> int:
        return top + plot_h - int(value / ceiling * plot_h)

    for step in range(5):
        value = ceiling * step / 4
        y = y_of(value)
        canvas.line(left, y, left + plot_w, y, GRID, width=1)
        label = amount(value)
        canvas.text(left - 8 - text_width(label), y - 5, label, AXIS)
    canvas.line(left, top, left, top + plot_h, AXIS, width=1)
    canvas.line(left, top + plot_h, left + plot_w, top + plot_h, AXIS, width=1)
    for fraction in (0, 0.5, 1):
        label = f"{duration * fraction:.1f} S"
        x = x_of(duration * fraction)
        canvas.text(min(x - text_width(label) // 2, width - text_width(label) - 2), top + plot_h + 10, label, AXIS)
    legend_x = left
    for number, (label, points, limit) in enumerate(drawn):
        color = COLORS[number % len(COLORS)]
        previous = None
        for t, value in points:
            here = (x_of(t), y_of(value))
            canvas.line(*(previous or here), *here, color)  # a lone first sample still shows, as a dot
            previous = here
        if limit:
            canvas.line(left, y_of(limit), left + plot_w, y_of(limit), LIMIT_COLOR if label == "RSS" else color, width=1, dash=6)
        canvas.rect(legend_x, 14, legend_x + 11, 25, color)
        legend_x = canvas.text(legend_x + 18, 15, label, INK) + 24
    if any(limit for _, _, limit in drawn):
        canvas.line(legend_x, 20, legend_x + 20, 20, LIMIT_COLOR, width=1, dash=4)
        legend_x = canvas.text(legend_x + 28, 15, "LIMIT", INK) + 24
    growth = drawn_growth(run)
    if growth:
        ends = (growth["fitted_from_s"], min(duration, growth["projected_s"] if growth["projected_s"] is not None else duration))
        (t0, v0), (t1, v1) = [(t, min(trend_at(growth, t), ceiling)) for t in ends]
        canvas.line(x_of(t0), y_of(v0), x_of(t1), y_of(v1), TREND_COLOR, width=1, dash=4)
        canvas.line(legend_x, 20, legend_x + 20, 20, TREND_COLOR, width=1, dash=4)
        canvas.text(legend_x + 28, 15, f"TREND {amount(growth['slope_bytes_per_min'])}/MIN", INK)
    return canvas.png()
