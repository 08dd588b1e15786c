#!/usr/bin/env python3
"""Draws one PNG per zabench JSON file in a report directory.

Each figure has a panel per metric (median of the iterations per variant,
whiskers from min to max, every iteration as a dot) and a panel of the
lock counters per operation, which explain the metrics on a noisy machine.
Usage: plot.py DIR
"""
import glob
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LOCK_COUNTERS = ["zone_lock_acquire", "zone_lock_contended", "pcp_refill", "pcp_bulkfree",
                 "list_lock_acquire", "list_lock_contended"]
COLOURS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860"]


def metric_panel(ax, name, variants):
    for i, v in enumerate(variants):
        m = v["metrics"][name]
        med = m.get("median", m["amean"])
        ax.bar(i, med, color=COLOURS[i % len(COLOURS)], alpha=0.8)
        ax.errorbar(i, med, yerr=[[med - m["min"]], [m["max"] - med]], color="black", capsize=4)
        ax.scatter([i] * len(m["values"]), m["values"], color="black", s=8, zorder=3)
    ax.set_xticks(range(len(variants)))
    ax.set_xticklabels([v["name"] for v in variants])
    ax.set_title(name, fontsize=9)


def counter_panel(ax, variants):
    names = [c for c in LOCK_COUNTERS if any(v["counters"].get(c) for v in variants)]
    if not names:
        ax.set_visible(False)
        return
    width = 0.8 / len(variants)
    for i, v in enumerate(variants):
        ops = max(v["counters"].get("ops", 1), 1)
        ax.bar([k + i * width for k in range(len(names))],
               [v["counters"].get(c, 0) / ops for c in names], width,
               label=v["name"], color=COLOURS[i % len(COLOURS)], alpha=0.8)
    ax.set_xticks([k + width * (len(variants) - 1) / 2 for k in range(len(names))])
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=7)
    ax.set_yscale("symlog", linthresh=1e-4)
    ax.set_title("per operation", fontsize=9)
    ax.legend(fontsize=7)


def ratio_panel(ax, variants, suffix, title):
    """Each allocator's median per benchmark, as a ratio to the best."""
    names = [m[:-len(suffix)] for m in variants[0]["metrics"] if m.endswith(suffix)]
    width = 0.8 / len(variants)
    for i, v in enumerate(variants):
        ratios = []
        for n in names:
            best = min(w["metrics"][n + suffix]["median"] for w in variants)
            ratios.append(v["metrics"][n + suffix]["median"] / best if best > 0 else 0)
        ax.bar([k + i * width for k in range(len(names))], ratios, width, label=v["name"],
               color=COLOURS[i % len(COLOURS)], alpha=0.85)
    ax.set_xticks([k + width * (len(variants) - 1) / 2 for k in range(len(names))])
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    ax.set_yscale("log")
    ax.axhline(1, color="black", linewidth=0.6)
    ax.set_ylabel("ratio to the best (log)", fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, ncol=len(variants))


def plot_malloc(path, run):
    fig, axes = plt.subplots(2, 1, figsize=(11, 7))
    ratio_panel(axes[0], run["variants"], "_s", "time, median (lower is better)")
    ratio_panel(axes[1], run["variants"], "_rss_mib", "peak RSS, median (lower is better)")
    fig.suptitle(os.path.basename(path)[:-5] + ": malloc, allocators compared", fontsize=10)
    fig.tight_layout()
    fig.savefig(path[:-5] + ".png", dpi=90)
    plt.close(fig)


def plot(path):
    with open(path) as f:
        run = json.load(f)
    if run["experiment"] == "malloc":
        plot_malloc(path, run)
        return
    variants = run["variants"]
    metrics = list(variants[0]["metrics"].keys())
    panels = len(metrics) + 1
    cols = min(panels, 4)
    rows = (panels + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.8 * rows), squeeze=False)
    axes = [a for row in axes for a in row]
    for ax, name in zip(axes, metrics):
        metric_panel(ax, name, variants)
    counter_panel(axes[len(metrics)], variants)
    for ax in axes[panels:]:
        ax.set_visible(False)
    fig.suptitle(os.path.basename(path)[:-5] + ": " + run["experiment"], fontsize=10)
    fig.tight_layout()
    fig.savefig(path[:-5] + ".png", dpi=90)
    plt.close(fig)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot.py DIR")
    for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
        plot(path)


if __name__ == "__main__":
    main()
