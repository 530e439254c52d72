"""The report's charts, drawn with matplotlib (the optional extra `sqlmetrics[report]`). Each chart function
takes plain numbers and returns a matplotlib Figure; svg() gives its inline SVG for the HTML page, save()
writes it to a .png or .svg file. matplotlib is imported on first use: the command line's other subcommands
never load it.
"""
from __future__ import annotations

import functools
import io
import math
import re
from pathlib import Path

from ..errors import SqlmetricsError
from ..local.output import replace_file, writable_target

WIN, LOSS, TIE = "#2e7d32", "#c62828", "#9e9e9e"
PLOT_FORMATS = (".png", ".svg")
_TIE = 1e-12  # a per-query difference this small is a tie (compare's win/tie/loss rule for values up to 1)
_WIDTH = 9.0  # inches (648 pt in SVG); the page narrows a chart to its own width


def figure_class():
    """matplotlib's Figure (no pyplot, no global state, no GUI backend), or an error saying how to install it."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise SqlmetricsError('the report draws its charts with matplotlib, which is not installed: '
                              'pip install ".[report]" in a clone of sqlmetrics.') from None
    return Figure


def _literal_text(draw):
    """Run and segment names are text, never maths: matplotlib reads `$...$` in any label as mathtext (and fails
    on `bm25 $\\frac{$`). Labels take the setting when they are made, tick labels when the figure is drawn:
    charts are built and drawn with it off."""
    @functools.wraps(draw)
    def literal(*args, **kwargs):
        import matplotlib

        with matplotlib.rc_context({"text.parse_math": False}):
            return draw(*args, **kwargs)
    return literal


@_literal_text
def deltas_chart(measure: str, better: str, baseline: str, deltas: dict):
    """Per-query differences against the baseline: one panel per run, bars sorted from the largest
    improvement to the largest loss, green where the run is better, red where it is worse.

    deltas: {run: [(query_id, run - baseline)]}.

    Sorted, the wins, the ties and the losses are three runs of neighbouring queries: each is drawn as one
    filled step outline (matplotlib's StepPatch, as `ax.stairs` draws it), one query a step, not one patch per
    query: the time to build and draw the chart and the size of its SVG then hardly grow with the number of
    queries. Up to _GAPPED queries the steps are parted into bars (a NaN step between two queries is a gap);
    beyond, a gap would be narrower than a pixel and the bars touch."""
    Figure = figure_class()
    fig = Figure(figsize=(_WIDTH, 2.6 * len(deltas) + 0.4), layout="constrained")
    axes = fig.subplots(len(deltas), 1, squeeze=False)[:, 0]
    sign = 1 if better == "higher" else -1
    for ax, (run, pairs) in zip(axes, deltas.items()):
        ranked = sorted(pairs, key=lambda p: (-sign * p[1], p[0]))
        values = [d for _, d in ranked]
        wins = sum(sign * d > _TIE for d in values)
        losses = sum(sign * d < -_TIE for d in values)
        # Sorted by sign * d: the wins come first, then the ties (|d| <= _TIE), then the losses.
        for colour, start, stop in ((WIN, 0, wins), (TIE, wins, len(values) - losses),
                                    (LOSS, len(values) - losses, len(values))):
            if stop > start:
                _stairs(ax, *_steps(values[start:stop], start, len(values) <= _GAPPED), colour)
        ax.autoscale_view()
        ax.axhline(0, color="#444444", linewidth=0.8)
        ax.set_title(f"{measure}: {run} − {baseline} per query ({wins} better, {losses} worse, "
                     f"{len(values) - wins - losses} tied)", fontsize=10, loc="left")
        ax.set_ylabel(f"Δ {measure}")
        ax.set_xlim(-0.6, max(len(values), 1) - 0.4)
        if len(values) <= 60:  # query ids stay legible up to about this many
            ax.set_xticks(range(len(values)), [q for q, _ in ranked], rotation=90, fontsize=6)
        else:
            ax.set_xticks([])
            ax.set_xlabel(f"{len(values)} queries, sorted by difference")
        ax.grid(axis="y", color="#e0e0e0", linewidth=0.6)
        ax.set_axisbelow(True)
    return fig


@_literal_text
def spread_chart(measure: str, values: dict):
    """Each run's distribution of the per-list values of unpaired runs ({run: [value per list]}), which have no
    per-query differences: the share of each run's lists in each of the same bins, as outlines over each other,
    and each run's mean as a dashed line of its colour."""
    import numpy as np

    Figure = figure_class()
    fig = Figure(figsize=(_WIDTH, 3.2), layout="constrained")
    ax = fig.subplots()
    every = [v for vs in values.values() for v in vs]
    low, high = (min(every), max(every)) if every else (0.0, 1.0)
    edges = np.linspace(low, high if high > low else low + 1.0, 31)
    for i, (run, vs) in enumerate(values.items()):
        colour = f"C{i % 10}"
        if vs:
            counts, _ = np.histogram(vs, bins=edges)
            ax.stairs(counts / len(vs), edges, color=colour, linewidth=1.6, label=f"{run} ({len(vs)} lists)")
            ax.axvline(math.fsum(vs) / len(vs), color=colour, linestyle="--", linewidth=1.2)
    ax.set_xlabel(measure)
    ax.set_ylabel("share of the run's lists")
    ax.set_title(f"{measure}: each run's values over its own lists (dashed: the mean)", fontsize=10, loc="left")
    ax.grid(axis="y", color="#e0e0e0", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.legend(fontsize=8, frameon=False)
    return fig


_GAPPED = 120  # up to this many queries the bars are parted (a gap of 0.15 of a query: about 1 pt at 120)
_BAR = 0.85  # a parted bar's width, in queries
_SERIES = {WIN: "better", TIE: "tied", LOSS: "worse"}  # the artists' labels (no legend is drawn: the colours say it)


def _stairs(ax, heights, edges, colour: str) -> None:
    """A filled StepPatch from 0, as ax.stairs(fill=True) draws it, but its data limits taken from its vertices at
    once: add_patch() walks a path segment by segment for them (a second for three charts of 7,000 queries)."""
    from matplotlib.patches import StepPatch

    patch = StepPatch(heights, edges, baseline=0, facecolor=colour, linewidth=0, label=_SERIES[colour])
    ax.add_artist(patch)
    patch.sticky_edges.y.append(0)  # as stairs() and bar(): no margin below a chart of gains only
    ax.update_datalim(patch.get_path().vertices)


def _steps(values: list, start: int, gapped: bool) -> tuple:
    """stairs()' (values, edges) for consecutive queries from position `start`: one step per query centred on
    its position, touching (a run of equal values one step), or (gapped) _BAR wide with a NaN step, which
    stairs() leaves empty, between two."""
    import numpy as np

    centres = np.arange(start, start + len(values), dtype=float)
    if not gapped:  # neighbours of equal value (many, for a cut-off measure such as P@10) share one wider step
        values = np.asarray(values, dtype=float)
        first = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
        return values[first], np.append(centres[first] - 0.5, centres[-1] + 0.5)
    edges = np.column_stack([centres - _BAR / 2, centres + _BAR / 2]).ravel()
    heights = np.column_stack([values, np.full(len(values), np.nan)]).ravel()[:-1]
    return heights, edges


@_literal_text
def pr_chart(levels: list, curves: dict):
    """Interpolated precision at the recall levels, one line per run: {run: [precision per level]}."""
    Figure = figure_class()
    fig = Figure(figsize=(_WIDTH * 0.62, 4.2), layout="constrained")
    ax = fig.subplots()
    for run, precision in curves.items():
        ax.plot(levels, [math.nan if p is None else p for p in precision], marker="o", markersize=3.5,
                linewidth=1.6, label=run)
    ax.set_xlabel("recall")
    ax.set_ylabel("interpolated precision")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_title("Precision–recall (interpolated, mean over queries)", fontsize=10, loc="left")
    ax.grid(color="#e0e0e0", linewidth=0.6)
    ax.legend(fontsize=8, frameon=False)
    return fig


@_literal_text
def segments_chart(measure: str, points: list, level: str = "95%"):
    """Each segment's mean with its confidence interval at `level` (compare's: the tests' level): points are (category, series, mean, low, high);
    categories along the x axis, the series of a category side by side."""
    Figure = figure_class()
    categories = list(dict.fromkeys(p[0] for p in points))
    series = list(dict.fromkeys(p[1] for p in points))
    fig = Figure(figsize=(_WIDTH, 3.6), layout="constrained")
    ax = fig.subplots()
    step = 0.7 / max(len(series), 1)
    for i, name in enumerate(series):
        mine = [p for p in points if p[1] == name]
        x = [categories.index(p[0]) + (i - (len(series) - 1) / 2) * step for p in mine]
        means = [p[2] for p in mine]
        below = [p[2] - p[3] if p[3] is not None else 0 for p in mine]
        above = [p[4] - p[2] if p[4] is not None else 0 for p in mine]
        ax.errorbar(x, means, yerr=[below, above], fmt="o", capsize=4, markersize=5, linewidth=1.4,
                    label=name or None)
    ax.set_xticks(range(len(categories)), categories, fontsize=8)
    ax.set_xlim(-0.6, len(categories) - 0.4)
    ax.set_ylabel(measure)
    ax.set_title(f"{measure} per segment: mean and {level} t confidence interval over lists",
                 fontsize=10, loc="left")
    ax.grid(axis="y", color="#e0e0e0", linewidth=0.6)
    if any(series):
        ax.legend(fontsize=8, frameon=False)
    return fig


@_literal_text
def svg(fig, prefix: str) -> str:
    """The figure as an <svg> element to inline in HTML: text drawn as paths (no font is fetched or needed),
    no date, and every id prefixed (references too) so that several charts on one page share none."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": prefix}):  # the salt: the same ids each time
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    text = text[text.index("<svg"):]  # without the XML declaration and DOCTYPE, which HTML does not take
    return re.sub(r'(\bid="|xlink:href="#|url\(#)', rf"\1{prefix}-", text)


def chart_path(path: str, name: str) -> str:
    """A file for save(): .png or .svg, in a writable place; checked before any work is done."""
    if Path(path).suffix.lower() not in PLOT_FORMATS:
        raise SqlmetricsError(f"{name}: write a .png or .svg file (the format follows the file name).")
    writable_target(path, name)
    return path


@_literal_text
def save(fig, path: str, name: str) -> None:
    """The figure written atomically (local.output.replace_file) as PNG or SVG, by the file's suffix."""
    fmt = Path(chart_path(path, name)).suffix.lower()[1:]
    replace_file(path, name, lambda tmp: fig.savefig(tmp, format=fmt, dpi=150,
                                                     metadata={"Date": None} if fmt == "svg" else None))
