"""The cell table of ``benchmarks/fewshot_peers.py --json`` runs: one Markdown table per features file, the
default method's gap to nearest prototype and to the best method that does not assume balanced queries.

    python benchmarks/fewshot_table.py RUN.json [RUN.json ...] [--title "CLINC150 sentence embeddings"]

Columns are the cells of the runs, in the order met (``balanced 5-way 1-shot``, ``dirichlet:0.5 5-way
1-shot``, ``Lake runs (accuracy)``, ...); rows the methods, accuracy ± 95 % interval. † marks a method that
assumes balanced queries (``assumes_balanced_queries``) in a cell whose query sets are not balanced (a
Dirichlet or open-set shape, or one query at a time); the best method without that assumption is bold. Under
the table:

* ``default − prototype``: the default method (:data:`pdenets.models.fewshot.DEFAULT_METHOD`) minus nearest
  prototype, and on the tasks where a class got no query (``share_with_empty_class``, shown from 5 % of the
  tasks) the same difference;
* ``default − best``: the default minus the best method that does not assume balanced queries;
* ``† − prototype`` on balanced cells: the lowest difference of a method that assumes balance, at its
  defaults (a ``NAME:KEY=VALUE`` variant is left out).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Dict, List

from pdenets.models.fewshot import DEFAULT_METHOD, METHOD_CLASSES

#: cells whose query sets are balanced, by the name ``fewshot_peers.py`` gives them
BALANCED_PREFIXES = ("balanced", "Lake runs")


def signed(difference: float) -> str:
    """A difference of accuracies to two decimals with its sign; one that rounds to zero is ``+0.00``."""
    return f"{round(difference, 2) + 0.0:+.2f}"  # + 0.0 turns -0.0 into 0.0


def balanced(cell: str) -> bool:
    return cell.startswith(BALANCED_PREFIXES)


def assumes_balance(method: str) -> bool:
    name = method.split(":")[0]
    return name in METHOD_CLASSES and METHOD_CLASSES[name].assumes_balanced_queries


def table(rows: List[dict], title: str) -> str:
    cells: Dict[str, Dict[str, dict]] = {}
    for row in rows:
        cells.setdefault(row["cell"], {})[row["method"]] = row
    methods = list(dict.fromkeys(row["method"] for row in rows))
    lines = [f"**{title}**", "", "| method | " + " | ".join(cells) + " |", "|---|" + "---:|" * len(cells)]
    best = {}
    for cell, entries in cells.items():
        free = {m: e["pdenets_accuracy"] for m, e in entries.items() if not assumes_balance(m)}
        best[cell] = max(free, key=free.__getitem__) if free else None
    for method in methods:
        texts = []
        for cell, entries in cells.items():
            entry = entries.get(method)
            if entry is None:
                texts.append("—")
                continue
            text = f"{entry['pdenets_accuracy']:.2f} ± {entry['pdenets_ci95']:.2f}"
            if method == best[cell]:
                text = f"**{text}**"
            if assumes_balance(method) and not balanced(cell):
                text += " †"
            texts.append(text)
        lines.append(f"| {method} | " + " | ".join(texts) + " |")
    gaps, to_best, assumed = [], [], []
    for cell, entries in cells.items():
        default, prototype = entries.get(DEFAULT_METHOD), entries.get("prototype")
        if default is None or prototype is None:
            gaps.append("—")
        else:
            gap = signed(default["pdenets_accuracy"] - prototype["pdenets_accuracy"])
            if "pdenets_accuracy_empty_class" in default and default["share_with_empty_class"] >= 0.05:
                empty = default["pdenets_accuracy_empty_class"] - prototype["pdenets_accuracy_empty_class"]
                share = 100 * default["share_with_empty_class"]
                gap += f" ({signed(empty)} on the {share:.0f} % with an empty class)"
            gaps.append(gap)
        leader = entries.get(best[cell]) if best[cell] else None
        to_best.append(
            "—"
            if default is None or leader is None
            else f"{signed(default['pdenets_accuracy'] - leader['pdenets_accuracy'])} ({best[cell]})"
        )
        marked = [m for m in entries if assumes_balance(m) and ":" not in m]  # at their defaults
        if balanced(cell) and marked and prototype is not None:
            low = min(marked, key=lambda m: entries[m]["pdenets_accuracy"])
            assumed.append(
                f"{signed(entries[low]['pdenets_accuracy'] - prototype['pdenets_accuracy'])} ({low})"
            )
        else:
            assumed.append("—")
    lines.append(f"| *{DEFAULT_METHOD} − prototype* | " + " | ".join(gaps) + " |")
    lines.append(f"| *{DEFAULT_METHOD} − best without †* | " + " | ".join(to_best) + " |")
    lines.append("| *lowest † − prototype, balanced* | " + " | ".join(assumed) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("runs", nargs="+", help="--json files of benchmarks/fewshot_peers.py")
    parser.add_argument("--title", default=None, help="the table's title (default: the files' names)")
    args = parser.parse_args()
    rows: List[dict] = []
    seen: set = set()
    for path in args.runs:
        with open(path, encoding="utf-8") as handle:
            read = json.load(handle)
        names = {row["cell"] for row in read}
        for (
            row
        ) in read:  # a cell met in an earlier file (the Lake runs of two backbones) is named by its file
            if row["cell"] in seen:
                row["cell"] += f" ({Path(path).stem})"
        seen |= names
        rows.extend(read)
    print(table(rows, args.title or ", ".join(args.runs)))


if __name__ == "__main__":
    main()
