"""``pdenets explain`` and ``pdenets suggest-labels``: a run's saved node model says why a node gets its
class, and which nodes to label next, by the ids of the user's graph.

    pdenets explain runs/my_graph --dataset my_graph.csv --ids paper17,paper40 --out why.csv
    pdenets suggest-labels runs/my_graph --dataset my_graph.csv --budget 20 --out to_label.csv

The graph is read as the run read its own (``pdenets predict`` reads it so); the explanations and criteria
are those of :mod:`pdenets.tasks.node_classification.decisions`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import List

from .predict_cli import _checked_out, _model_folder, _task_of
from .tasks.node_classification.decisions import MAX_EXPLAINED, write_explanations, write_suggestions
from .tasks.node_classification.model import NodeModel

__all__ = ["run_explain_command", "run_suggest_command"]


def _node_model(args) -> tuple:
    """The run's saved node model and the ``--dataset`` graph read as it reads one, after ``--out`` was
    checked (one line otherwise)."""
    run = Path(args.run)
    if not run.is_dir():
        raise ValueError(f"{run}: not a run folder; give the folder a run wrote its report into")
    folder = _model_folder(run, args.model)
    out = _checked_out(args, [Path(args.dataset)])
    task = _task_of(folder)
    if task != "node-classification":
        raise ValueError(
            f"{folder}: a {task or 'unknown'} model; {args.command} answers for node-classification models"
        )
    model = NodeModel.load(folder)
    return model, model.read_graph(args.dataset), folder, out


def _ids(args) -> List[str]:
    """``--ids a,b,…`` and the lines of ``--ids-file`` (bounded), in order, without repeats."""
    given: List[str] = []
    if args.ids:
        given += [node.strip() for node in args.ids.split(",") if node.strip()]
    if args.ids_file:
        from ._io import read_bounded

        text = read_bounded(args.ids_file, 64 * MAX_EXPLAINED, "the ids a call explains").decode("utf-8")
        given += [line.strip() for line in text.splitlines() if line.strip()]
    if not given:
        raise ValueError("give the nodes to explain with --ids ID,ID,... or --ids-file FILE (one id a line)")
    return list(dict.fromkeys(given))


def run_explain_command(args) -> int:
    """``pdenets explain RUN_DIR --dataset GRAPH --ids …``."""
    ids = _ids(args)
    model, graph, folder, out = _node_model(args)
    start = time.perf_counter()
    explanations = model.explain(ids, graph, top=args.top)
    write_explanations(out, explanations, overwrite=args.overwrite, inputs=[args.dataset])
    seconds = time.perf_counter() - start
    for item in explanations[:5]:
        leading = ", ".join(
            f"{c.id}{'*' if c.label is not None else ''} {c.share:+.2f}" for c in item.contributors[:3]
        )
        print(
            f"{item.id}: {item.predicted} (p = {item.probability:.2f}, log-odds over {item.runner_up} "
            f"{item.margin:.2f}); largest shares: {leading}"
        )
    if len(explanations) > 5:
        print(f"... and {len(explanations) - 5} more")
    print(
        f"{len(explanations)} node(s) of {args.dataset} explained by {folder} in {seconds:.1f} s "
        f"(* : labelled in the file); written to {out}"
    )
    return 0


def run_suggest_command(args) -> int:
    """``pdenets suggest-labels RUN_DIR --dataset GRAPH --budget B``."""
    model, graph, folder, out = _node_model(args)
    start = time.perf_counter()
    suggestions = model.suggest_labels(args.budget, graph, criterion=args.criterion, seed=args.seed)
    write_suggestions(out, suggestions, overwrite=args.overwrite, inputs=[args.dataset])
    seconds = time.perf_counter() - start
    unlabelled = int((graph.y < 0).sum())
    print(
        f"{len(suggestions)} of the {unlabelled:,} unlabelled nodes of {args.dataset} to label next, by "
        f"{args.criterion} ({folder}, {seconds:.1f} s): {', '.join(s.id for s in suggestions[:10])}"
        f"{' ...' if len(suggestions) > 10 else ''}; written to {out}"
    )
    return 0
