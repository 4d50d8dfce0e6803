"""Steady growth of a command's memory (a leak's signature) and when it would meet a limit.

Pure: computed from the recorded samples whenever a run is judged, so a report re-judged later gets
the same answer from the same facts. A least-squares line is fitted to the process tree's RSS over
the run after its first WARMUP_FRACTION (imports and model loading are a step, not a leak) and before
its teardown (a final fall of more than TEARDOWN_FRACTION: memory freed on exit, a zombie's zero).
It is steady growth when all of these hold:

- at least MIN_SAMPLES samples are left after the warm-up;
- the line fits: R² ≥ MIN_R2 (RSS follows it rather than jumping about);
- the slope is material: ≥ MIN_SLOPE_BYTES_PER_MIN (1 MiB/min), and along the fitted part of the
  run RSS rose by ≥ MIN_GROWTH_FRACTION (10 %) of where it started, so a 10 GiB trainer needs to
  gain 1 GiB, not a few MiB of allocator noise.

The projection says when the trend meets the nearest limit: the tree's RSS line against the memory
cgroup's limit and the machine's RAM, and the largest process's address space (its own line, fitted
the same way) against RLIMIT_AS. `projected_s` counts from the start of the run.

Growth is a cause of a failure only with a limit in sight: `near_limit` when the series ended within
NEAR_LIMIT_FRACTION of its limit; `sustained` when it kept rising well past start-up, over at least
MIN_TREND_S of fitted samples and still rising in their last third (at least half the overall slope).
A short run's rise while torch and SB3 import is a ramp: neither.
"""

from __future__ import annotations

from typing import List, Mapping, Optional, Sequence, Tuple

WARMUP_FRACTION = 0.15
MIN_SAMPLES = 8
MIN_R2 = 0.8
MIN_SLOPE_BYTES_PER_MIN = 1 << 20
MIN_GROWTH_FRACTION = 0.10
TEARDOWN_FRACTION = 0.10
LARGEST = 2.0 ** 64
NEAR_LIMIT_FRACTION = 0.9
MIN_TREND_S = 30.0
LATE_SLOPE_FRACTION = 0.5

Points = List[Tuple[float, float]]


def number(value) -> Optional[float]:
    """An int or float below 2**64 in size (a recorded report may hold anything, and squares of
    larger ones overflow), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not abs(value) < LARGEST:
        return None
    return float(value)


def points(samples: Sequence, key: str) -> Points:
    """(t, value) of the samples that have both as finite numbers, in time order."""
    found = []
    for sample in samples if isinstance(samples, (list, tuple)) else ():
        if isinstance(sample, Mapping):
            t, value = number(sample.get("t")), number(sample.get(key))
            if t is not None and value is not None:
                found.append((t, value))
    return sorted(found)


def before_teardown(series: Points) -> Points:
    """`series` without its final fall, when it falls by more than TEARDOWN_FRACTION."""
    top = len(series) - 1
    while top > 0 and series[top][1] < series[top - 1][1]:
        top -= 1
    return series[: top + 1] if series and series[-1][1] < (1 - TEARDOWN_FRACTION) * series[top][1] else series


def fitted_part(series: Points) -> Points:
    """The samples between the warm-up and the teardown."""
    series = before_teardown(series)
    if not series:
        return []
    start, end = series[0][0], series[-1][0]
    cutoff = start + WARMUP_FRACTION * (end - start)
    return [p for p in series if p[0] >= cutoff]


def line_fit(series: Points) -> Optional[Tuple[float, float, float]]:
    """Least squares: (slope per second, intercept, R²); None when time does not vary."""
    n = len(series)
    if n < 2:
        return None
    mean_t = sum(t for t, _ in series) / n
    mean_v = sum(v for _, v in series) / n
    spread_t = sum((t - mean_t) ** 2 for t, _ in series)
    if spread_t <= 0:
        return None
    slope = sum((t - mean_t) * (v - mean_v) for t, v in series) / spread_t
    intercept = mean_v - slope * mean_t
    total = sum((v - mean_v) ** 2 for _, v in series)
    residual = sum((v - intercept - slope * t) ** 2 for t, v in series)
    return slope, intercept, (1 - residual / total) if total > 0 else 0.0


def reaches_at(fit: Tuple[float, float, float], limit: float) -> Optional[float]:
    """When a rising line reaches `limit` (seconds since the start), None when it does not rise."""
    slope, intercept, _ = fit
    return (limit - intercept) / slope if slope > 0 else None


def limits(memory: Mapping) -> List[Tuple[str, str, float]]:
    """(name, series it bounds, bytes) of each known limit."""
    cgroups = memory.get("cgroups") if isinstance(memory.get("cgroups"), list) else []
    found = [("memory cgroup", "rss_bytes", number(c.get("limit_bytes"))) for c in cgroups if isinstance(c, Mapping)]
    found.append(("RAM", "rss_bytes", number(memory.get("ram_total_bytes"))))
    found.append(("address-space", "vms_max_bytes", number(memory.get("address_space_limit_bytes"))))
    return [(name, key, value) for name, key, value in found if value and value > 0]


def peak_share(memory: Mapping) -> Optional[Tuple[str, float, float]]:
    """The memory limit the command's peak RSS came closest to: (its name, the peak, the share of the
    limit it reached); None where the run recorded no peak or no limit."""
    peak = number(memory.get("peak_rss_bytes"))
    shares = [(name, peak, peak / limit) for name, key, limit in limits(memory) if key == "rss_bytes"] if peak else []
    return max(shares, key=lambda share: share[2]) if shares else None


def nearest_limit(memory: Mapping, rss_fit: Tuple[float, float, float], window: Points) -> Tuple[Optional[str], Optional[float], Optional[float], bool]:
    """The limit the trend meets first: (name, bytes, seconds since the start), or Nones; and whether
    either series ended within NEAR_LIMIT_FRACTION of its limit."""
    samples = memory.get("samples")
    vms = [p for p in points(samples, "vms_max_bytes") if window[0][0] <= p[0] <= window[-1][0]]
    series = {"rss_bytes": window, "vms_max_bytes": vms}
    fits = {"rss_bytes": rss_fit, "vms_max_bytes": line_fit(vms)}
    reached, near = [], False
    for name, key, limit in limits(memory):
        at = reaches_at(fits[key], limit) if fits[key] else None
        if at is not None:
            reached.append((max(0.0, at), name, limit))
        near = near or bool(series[key] and max(v for _, v in series[key]) >= NEAR_LIMIT_FRACTION * limit)
    if not reached:
        return None, None, None, near
    at, name, limit = min(reached)
    return name, limit, at, near


def sustained(window: Points, slope: float) -> bool:
    """Still rising well past start-up: a fitted span of MIN_TREND_S or more whose last third rises at
    least LATE_SLOPE_FRACTION as fast as the whole."""
    if window[-1][0] - window[0][0] < MIN_TREND_S:
        return False
    late = [p for p in window if p[0] >= window[-1][0] - (window[-1][0] - window[0][0]) / 3]
    fit = line_fit(late) if len(late) >= 3 else None
    return fit is not None and fit[0] >= LATE_SLOPE_FRACTION * slope


def steady_growth(memory: Mapping) -> Optional[dict]:
    """The steady growth of a run's `memory` facts (slope, fit, the limit it heads for), or None."""
    if not isinstance(memory, Mapping):
        return None
    window = fitted_part(points(memory.get("samples"), "rss_bytes"))
    fit = line_fit(window) if len(window) >= MIN_SAMPLES else None
    if fit is None:
        return None
    slope, intercept, r2 = fit
    start_fitted, end_fitted = intercept + slope * window[0][0], intercept + slope * window[-1][0]
    material = slope * 60 >= MIN_SLOPE_BYTES_PER_MIN and end_fitted - start_fitted >= MIN_GROWTH_FRACTION * max(start_fitted, 1.0)
    if r2 < MIN_R2 or not material:
        return None
    limit_name, limit_bytes, projected_s, near = nearest_limit(memory, fit, window)
    return {
        "slope_bytes_per_min": round(slope * 60),
        "r2": round(r2, 3),
        "start_bytes": int(window[0][1]),
        "end_bytes": int(window[-1][1]),
        "fitted_from_s": window[0][0],
        "fitted_to_s": window[-1][0],
        "limit_name": limit_name,
        "limit_bytes": int(limit_bytes) if limit_bytes else None,
        "projected_s": round(projected_s, 1) if projected_s is not None else None,
        "near_limit": near,
        "sustained": sustained(window, slope),
    }


def more_than_a_ramp(growth: Mapping) -> bool:
    """Growth with a limit in sight or that went on well past start-up. Anything less may be imports
    and a model loading: its trend is not drawn and not projected, since a few seconds of start-up
    extrapolated to the machine's RAM says nothing about the run."""
    return bool(growth.get("near_limit") or growth.get("sustained"))


def trend_at(growth: Mapping, t: float) -> float:
    """The fitted RSS at `t` seconds (for drawing the trend line)."""
    return growth["end_bytes"] + growth["slope_bytes_per_min"] / 60 * (t - growth["fitted_to_s"])
