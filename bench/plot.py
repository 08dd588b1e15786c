#!/usr/bin/env python3
"""Draws one PNG per zabench JSON file in a report directory.

An A/B run gets three panels: the headline metric per variant (bars are
medians, error bars the 95% interval of the median, dots the iterations),
every metric's change with its 95% interval (the verdict zabench computed),
and every counter per operation as the after/before ratio on one log axis.
A run of one variant gets its metrics and its counters per operation; the
malloc comparison gets each allocator's time and peak RSS relative to the
best.  A replay gets its fidelity table: each row, all orders, per 1000
page allocations, the kernel's (from the trace) beside each variant's
(and, with --predict, the second kernel's beside the "after" variant).  A
--sweep gets every metric and observation against the swept value.  The
fidelity scorecard gets each trace's rows, the kernel's against zonealloc's.
Usage: plot.py DIR
"""
import glob
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLOURS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860"]
VERDICT_COLOURS = {"better": "#55a868", "worse": "#c44e52", "within noise": "#9a9a9a",
                   "inconclusive": "#e0b040", "n/a": "#dddddd"}
# The counters that explain a seed, drawn first when present.
MECHANISM = ["zone_lock_acquire", "zone_lock_contended", "zone_lock_hold_ns", "pcp_refill",
             "pcp_bulkfree", "pcp_bulkfree_hold_ns", "list_lock_acquire",
             "list_lock_contended", "alloc_slowpath", "pgactivate", "pgmajfault",
             "bytes_zeroed", "quicklist_hit", "quicklist_miss"]
MAX_COUNTERS = 16


def median_interval(values):
    """The median's distribution-free interval from order statistics: 95%
    when there are enough values, else their whole range."""
    v = sorted(values)
    n = len(v)
    k = 0  # values dropped from each end
    while k + 1 < n / 2:
        tail = sum(math.comb(n, i) for i in range(k + 2)) / 2 ** n
        if tail > 0.025:
            break
        k += 1
    return v[k], v[n - 1 - k]


def unit_of(run, name):
    return run.get("metric_units", {}).get(name, "")


def headline_panel(ax, run, name):
    variants = run["variants"]
    for i, v in enumerate(variants):
        m = v["metrics"][name]
        lo, hi = median_interval(m["values"])
        med = m["median"]
        ax.bar(i, med, color=COLOURS[i % len(COLOURS)], alpha=0.8, width=0.6)
        ax.errorbar(i, med, yerr=[[med - lo], [hi - med]], color="black", capsize=5)
        ax.scatter([i] * len(m["values"]), m["values"], color="black", s=9, zorder=3)
    ax.set_xticks(range(len(variants)))
    ax.set_xticklabels([v["name"] for v in variants])
    ax.set_xlim(-0.6 - 0.5 * (len(variants) == 1), len(variants) - 0.4 + 0.5 * (len(variants) == 1))
    ax.set_ylabel(f"{name} ({unit_of(run, name)})", fontsize=8)
    n = len(variants[0]["metrics"][name]["values"])
    direction = run["metric_directions"][name]
    ax.set_title(f"{name}: median of {n} iterations ({direction} is better)\n"
                 "error bars: interval of the median; dots: iterations", fontsize=8)
    ax.ticklabel_format(axis="y", style="plain", useOffset=False)
    ax.tick_params(labelsize=7)


def changes_panel(ax, run):
    """Each metric's change, positive = better, with its interval."""
    comps = run["comparisons"]
    names = [n for n in comps if comps[n]["change"] is not None]
    if not names:
        ax.text(0.5, 0.5, "no metric has a baseline to compare with", ha="center",
                va="center", transform=ax.transAxes, fontsize=8)
        ax.set_axis_off()
        return
    ys = range(len(names))
    for y, n in zip(ys, names):
        c = comps[n]
        ch, lo, hi = 100 * c["change"], 100 * c["lo"], 100 * c["hi"]
        ax.barh(y, ch, color=VERDICT_COLOURS.get(c["verdict"], "#999"), height=0.6)
        ax.errorbar(ch, y, xerr=[[max(ch - lo, 0)], [max(hi - ch, 0)]], color="black",
                    capsize=3, fmt="none")
    ax.axvline(0, color="black", linewidth=0.7)
    ax.set_yticks(list(ys))
    ax.set_yticklabels([f"{n} ({comps[n]['verdict']})" for n in names], fontsize=7)
    ax.invert_yaxis()
    ends = [100 * comps[n][k] for n in names for k in ("lo", "hi", "change")]
    span = max(max(abs(e) for e in ends), 1.0)
    ax.set_xlim(-1.15 * span, 1.15 * span)
    ax.set_xlabel("change after vs before, % (positive = better)", fontsize=8)
    ax.set_title("every metric: change (median pairwise ratio), 95% interval", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)


def per_op(v, name):
    ops = v["counters"].get("ops", 0)
    return v["counters"].get(name, 0) / ops if ops else 0


def scaled(x):
    """A per-op value in words a reader takes in: 0.0021 -> '2.1/1k ops'."""
    if x == 0:
        return "0"
    for scale, label in ((1, "/op"), (1e3, "/1k ops"), (1e6, "/1M ops"), (1e9, "/1G ops")):
        if abs(x) * scale >= 0.95:
            return f"{x * scale:.3g}{label}"
    return f"{x:.2g}/op"


def counter_names(run):
    variants = run["variants"]
    gauges = set(run.get("gauges", []))
    names = [c for c in variants[0]["counters"] if c != "ops" and c not in gauges
             and any(v["counters"].get(c) for v in variants)]
    first = [c for c in MECHANISM if c in names]
    rest = [c for c in names if c not in first]
    if len(variants) == 2:
        def spread(c):
            a, b = per_op(variants[0], c), per_op(variants[1], c)
            return abs(math.log(b / a)) if a > 0 and b > 0 else 99
        rest.sort(key=spread, reverse=True)
    return (first + rest)[:MAX_COUNTERS]


def ratio_counter_panel(ax, run, names):
    """after/before of each counter per operation, on one log axis."""
    before, after = run["variants"][0], run["variants"][1]
    ratios = []
    for c in names:
        a, b = per_op(before, c), per_op(after, c)
        ratios.append(b / a if a > 0 and b > 0 else None)
    finite = [r for r in ratios if r]
    top = max([max(r, 1 / r) for r in finite] + [3.4]) * 3
    for y, (c, r) in enumerate(zip(names, ratios)):
        a, b = per_op(before, c), per_op(after, c)
        if r:
            ax.barh(y, math.log10(r), color="#4c72b0" if r <= 1 else "#dd8452", height=0.6)
        else:  # one side is zero: no ratio, a marker at the edge
            edge = math.log10(top) * (1 if a == 0 else -1) * 0.9
            ax.plot([edge], [y], marker=">" if a == 0 else "<", color="black")
        ax.text(1.02, y, f"{scaled(a)} → {scaled(b)}", transform=ax.get_yaxis_transform(),
                va="center", fontsize=7)
    ax.axvline(0, color="black", linewidth=0.7)
    lim = math.log10(top)
    ax.set_xlim(-lim, lim)
    ticks = [t for t in range(-6, 7) if abs(t) <= lim]
    if len(ticks) < 3:
        ticks = [-lim * 0.9, 0, lim * 0.9]
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"×{10 ** t:.3g}" for t in ticks], fontsize=7)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("counter per operation, after / before (log scale; "
                  "a triangle: zero on one side)", fontsize=8)
    ax.set_title("counters (exact, not noisy): per operation, before → after at the right",
                 fontsize=8)


def value_counter_panel(ax, run, names):
    v = run["variants"][0]
    vals = [per_op(v, c) for c in names]
    ax.barh(range(len(names)), vals, color="#4c72b0", height=0.6)
    ax.set_xscale("log")
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=7)
    ax.invert_yaxis()
    for y, x in enumerate(vals):
        ax.text(1.02, y, scaled(x), transform=ax.get_yaxis_transform(), va="center",
                fontsize=7)
    ax.set_xlabel("per operation (log scale)", fontsize=8)
    ax.set_title("counters per operation", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)


def plot_ab(run, path):
    names = counter_names(run)
    height = 3.2 + 0.22 * max(len(names), 4)
    fig = plt.figure(figsize=(12, height))
    grid = fig.add_gridspec(2, 2, height_ratios=[3.2, 0.22 * max(len(names), 4)],
                            width_ratios=[1, 1.4])
    headline_panel(fig.add_subplot(grid[0, 0]), run, run["headline"])
    changes_panel(fig.add_subplot(grid[0, 1]), run)
    if names:
        ratio_counter_panel(fig.add_subplot(grid[1, :]), run, names)
    finish(fig, run, path)


def plot_single(run, path):
    metrics = [m for m in run["variants"][0]["metrics"]]
    names = counter_names(run)
    cols = min(len(metrics), 3)
    rows = (len(metrics) + cols - 1) // cols
    fig = plt.figure(figsize=(12, 2.8 * rows + 0.25 * max(len(names), 4) + 0.8))
    grid = fig.add_gridspec(rows + 1, cols, height_ratios=[2.8] * rows +
                            [0.25 * max(len(names), 4)])
    for i, m in enumerate(metrics):
        headline_panel(fig.add_subplot(grid[i // cols, i % cols]), run, m)
    if names:
        value_counter_panel(fig.add_subplot(grid[rows, :]), run, names)
    finish(fig, run, path)


def ratio_panel(ax, variants, suffix, title):
    """Each allocator's median per benchmark, as a ratio to the best."""
    names = [m[:-len(suffix)] for m in variants[0]["metrics"] if m.endswith(suffix)]
    width = 0.8 / len(variants)
    for i, v in enumerate(variants):
        ratios = []
        for n in names:
            best = min(w["metrics"][n + suffix]["median"] for w in variants)
            ratios.append(v["metrics"][n + suffix]["median"] / best if best > 0 else 1)
        ax.bar([k + i * width for k in range(len(names))], ratios, width, label=v["name"],
               color=COLOURS[i % len(COLOURS)], alpha=0.85)
    ax.set_xticks([k + width * (len(variants) - 1) / 2 for k in range(len(names))])
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    ax.set_yscale("log")
    ax.axhline(1, color="black", linewidth=0.6)
    ax.set_ylabel("median / best allocator's (log)", fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))


def plot_malloc(run, path):
    fig, axes = plt.subplots(2, 1, figsize=(12, 7))
    ratio_panel(axes[0], run["variants"], "_s", "time: median per benchmark, lower is better")
    ratio_panel(axes[1], run["variants"], "_rss_mib",
                "peak RSS: median per benchmark, lower is better")
    n = len(run["variants"][0]["metrics"]["geomean_s"]["values"])
    run = dict(run, title=f"{run.get('title', 'malloc')}: "
               f"{', '.join(v['name'] for v in run['variants'])} (median of {n} runs each)")
    finish(fig, run, path)


FIDELITY_ROWS = ["pcp_refill_pages", "zone_locked_allocs", "pcp_drain_pages",
                 "extfrag_fallbacks", "pageblock_steals"]


def all_orders(fidelity, side):
    """{row: value} of the all-CPU, all-order rows of one side."""
    return {r["metric"]: r[side] for r in fidelity["rows"]
            if r["cpu"] is None and r["order"] is None}


def fidelity_panel(ax, run):
    """Grouped bars per row: the kernel, each variant, the predicted kernel."""
    variants = run["variants"]
    bars = [("kernel", all_orders(variants[0]["fidelity"], "kernel"))]
    bars += [(f"zonealloc {v['name']}", all_orders(v["fidelity"], "zonealloc")) for v in variants]
    predicted = variants[-1].get("predicted")
    if predicted:
        bars.append(("kernel of --predict", all_orders(predicted["fidelity"], "kernel")))
    width = 0.8 / len(bars)
    for i, (label, rows) in enumerate(bars):
        values = [rows.get(r) or 0 for r in FIDELITY_ROWS]
        ax.bar([k + i * width for k in range(len(FIDELITY_ROWS))], values, width, label=label,
               color="#333333" if label.startswith("kernel") and i == 0 else COLOURS[i % len(COLOURS)],
               alpha=0.85, hatch="//" if label == "kernel of --predict" else None)
    ax.set_xticks([k + width * (len(bars) - 1) / 2 for k in range(len(FIDELITY_ROWS))])
    ax.set_xticklabels(FIDELITY_ROWS, fontsize=8)
    ax.set_ylabel("per 1000 page allocations", fontsize=8)
    ax.set_title("fidelity: the kernel's per-CPU lists beside zonealloc's (all orders)",
                 fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))


def plot_replay(run, path):
    fig = plt.figure(figsize=(12, 7))
    grid = fig.add_gridspec(2, 2, height_ratios=[1, 1.2], width_ratios=[1, 1.4])
    headline_panel(fig.add_subplot(grid[0, 0]), run, run["headline"])
    if len(run["variants"]) == 2 and run.get("comparisons"):
        changes_panel(fig.add_subplot(grid[0, 1]), run)
    fidelity_panel(fig.add_subplot(grid[1, :]), run)
    finish(fig, run, path)


def plot_sweep(doc, path):
    """Every metric's median and the replay's fidelity rows against the value."""
    sweep = doc["sweep"]
    values = sweep["values"]
    runs = sweep["runs"]
    series = {}
    for k, run in enumerate(runs):
        for v in run["variants"]:
            for name, m in v["metrics"].items():
                series.setdefault((name, v["name"], unit_of(run, name)), [None] * len(runs))[k] = m["median"]
            fid = v.get("fidelity")
            if fid:
                for side in ("zonealloc", "kernel"):
                    for row, x in all_orders(fid, side).items():
                        label = row if side == "zonealloc" else f"kernel {row}"
                        series.setdefault((label, v["name"], "per 1000 allocs"),
                                          [None] * len(runs))[k] = x
    panels = sorted({(name[len("kernel "):] if name.startswith("kernel ") else name, unit)
                     for name, _, unit in series})
    cols = min(len(panels), 3)
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(12, 3 * rows), squeeze=False)
    for ax, (name, unit) in zip(axes.flat, panels):
        for i, ((label, variant, u), ys) in enumerate(sorted(series.items())):
            base = label[len("kernel "):] if label.startswith("kernel ") else label
            if base != name or u != unit:
                continue
            style = "--" if label.startswith("kernel ") else "-"
            ax.plot(range(len(values)), [y if y is not None else float("nan") for y in ys],
                    style, marker="o", label=f"{'kernel' if style == '--' else 'zonealloc'} {variant}",
                    color=COLOURS[i % len(COLOURS)])
        ax.set_xticks(range(len(values)))
        ax.set_xticklabels(values, fontsize=8)
        ax.set_xlabel(sweep["key"], fontsize=8)
        ax.set_title(f"{name} ({unit})", fontsize=9)
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    finish(fig, {"title": f"sweep of {sweep['key']}: {runs[0].get('title', '')}",
                 "experiment": runs[0]["experiment"]}, path)


def plot_scorecard(doc, path):
    """Each trace's all-orders rows: the kernel's figure against zonealloc's,
    one panel per row, on a log scale, with the band of 25% (+5) around the
    diagonal; the first split's points filled, the others' hollow."""
    metrics = list(dict.fromkeys(r["metric"] for r in doc["rows"]))
    fig, axes = plt.subplots(1, len(metrics), figsize=(5 * len(metrics), 4.8), squeeze=False)
    for ax, metric in zip(axes.flat, metrics):
        rows = [r for r in doc["rows"] if r["metric"] == metric]
        top = max([r["kernel"] or 0 for r in rows] + [r["zonealloc"] or 0 for r in rows] + [10]) * 1.5
        xs = [0.5 + top * i / 200 for i in range(201)]
        ax.plot(xs, xs, color="#333333", linewidth=0.8)
        ax.fill_between(xs, [max(0.5, x * 0.75 - 5) for x in xs], [x * 1.25 + 5 for x in xs],
                        color="#55a868", alpha=0.15, label="within 25% (+5)")
        splits = list(dict.fromkeys(r["split"] for r in doc["rows"]))
        for i, split in enumerate(splits):
            pts = [r for r in rows if r["split"] == split]
            colour = COLOURS[(i * 3) % len(COLOURS)]
            ax.scatter([(r["kernel"] or 0) + 0.5 for r in pts], [(r["zonealloc"] or 0) + 0.5 for r in pts],
                       facecolors=colour if i == 0 else "none", edgecolors=colour, label=split)
            for r in pts:
                ax.annotate(r["trace"], ((r["kernel"] or 0) + 0.5, (r["zonealloc"] or 0) + 0.5),
                            fontsize=6, xytext=(3, 3), textcoords="offset points")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("kernel, per 1000 page allocations (+0.5)", fontsize=8)
        ax.set_ylabel("zonealloc (+0.5)", fontsize=8)
        ax.set_title(metric, fontsize=9)
        ax.legend(fontsize=7)
    finish(fig, {"title": "fidelity scorecard: the kernel's figures against zonealloc's",
                 "experiment": "scorecard"}, path)


def finish(fig, run, path):
    fig.suptitle(run.get("title", run["experiment"]), fontsize=10, fontweight="bold")
    fig.tight_layout(rect=(0, 0, 0.93, 0.97))
    fig.savefig(path[:-5] + ".png", dpi=90)
    plt.close(fig)


def plot(path):
    with open(path) as f:
        run = json.load(f)
    if run.get("kind") == "scorecard":
        plot_scorecard(run, path)
    elif "sweep" in run:
        plot_sweep(run, path)
    elif run["variants"] and "fidelity" in run["variants"][0]:
        plot_replay(run, path)
    elif run["experiment"] == "malloc":
        plot_malloc(run, path)
    elif len(run["variants"]) == 2 and run.get("comparisons"):
        plot_ab(run, path)
    else:
        plot_single(run, path)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot.py DIR")
    for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
        plot(path)


if __name__ == "__main__":
    main()
