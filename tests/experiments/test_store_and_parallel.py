import sqlite3

import pytest

from pdenets.experiments.parallel import Job, run_jobs
from pdenets.experiments.store import ResultsStore
from pdenets.tasks.node_classification import NodeClassificationConfig, make_jobs, run_single

from ..graph_fixtures import write_sbm_npz


def test_store_ignores_duplicates_and_uses_wal(tmp_path):
    path = tmp_path / "r.sqlite"
    with ResultsStore(path) as store:
        assert store.add({"key": "k1", "experiment": "e", "accuracy": 0.5, "params": {"a": 1}, "best_epoch": 3})
        assert not store.add({"key": "k1", "experiment": "e", "accuracy": 0.9})
        row = store.rows()[0]
        assert row["params"] == {"a": 1} and row["best_epoch"] == 3 and store.count("e") == 1
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    with pytest.raises(ValueError, match="key"):
        ResultsStore(path).add({"accuracy": 1.0})


def _config(tmp_path, **changes):
    graph = str(write_sbm_npz(tmp_path / "sbm.npz"))
    values = dict(datasets=[graph], models=["diff-resnet", "gcn"], num_splits=2, num_inits=2, max_epochs=15,
                  patience=5, train_per_class=10, val_per_class=10)
    values.update(changes)
    return NodeClassificationConfig(**values)


def test_rerun_skips_stored_runs(tmp_path):
    config = _config(tmp_path)
    jobs = make_jobs(config)
    assert len(jobs) == 8 and len({j.key for j in jobs}) == 8
    with ResultsStore(tmp_path / "r.sqlite") as store:
        assert run_jobs(jobs[:3], run_single, store=store, workers=1, progress=False) == 3
        assert run_jobs(jobs, run_single, store=store, workers=1, progress=False) == 5
        assert run_jobs(jobs, run_single, store=store, workers=1, progress=False) == 0
        assert store.count() == 8


def test_process_pool_gives_the_same_results_as_inline(tmp_path):
    config = _config(tmp_path, models=["diff-resnet"], num_inits=1)
    jobs = make_jobs(config)
    with ResultsStore(tmp_path / "inline.sqlite") as inline, ResultsStore(tmp_path / "pool.sqlite") as pool:
        run_jobs(jobs, run_single, store=inline, workers=1, threads_per_worker=1, progress=False)
        run_jobs(jobs, run_single, store=pool, workers=2, threads_per_worker=1, progress=False)
        first = {r["key"]: (r["accuracy"], r["epochs"]) for r in inline.rows()}
        second = {r["key"]: (r["accuracy"], r["epochs"]) for r in pool.rows()}
    assert first == second


def test_ray_address_without_ray_is_a_clear_error(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray":
            raise ImportError("no ray")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with ResultsStore(tmp_path / "r.sqlite") as store, pytest.raises(ImportError, match="pdenets\\[distributed\\]"):
        run_jobs([Job("a", {}), Job("b", {})], run_single, store=store, ray_address="auto", progress=False)


def test_ray_cluster_gives_the_same_results_as_inline(tmp_path):
    ray = pytest.importorskip("ray")
    config = _config(tmp_path, models=["diff-resnet"], num_splits=2, num_inits=1)
    jobs = make_jobs(config)
    try:
        with ResultsStore(tmp_path / "inline.sqlite") as inline, ResultsStore(tmp_path / "ray.sqlite") as cluster:
            run_jobs(jobs, run_single, store=inline, workers=1, threads_per_worker=1, progress=False)
            run_jobs(jobs, run_single, store=cluster, ray_address="local", threads_per_worker=1, progress=False)
            first = {r["key"]: (r["accuracy"], r["epochs"]) for r in inline.rows()}
            second = {r["key"]: (r["accuracy"], r["epochs"]) for r in cluster.rows()}
    finally:
        ray.shutdown()
    assert first == second
