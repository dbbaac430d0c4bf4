"""The store keys of every task's quick and default configuration, pinned: a change of a job spec (a field
moved to the run's context, a renamed setting, a new field) that would re-plan the runs users have stored
fails here. Planned without the data (``jobs()`` reads no file); the few-shot keys, which need the features'
fingerprints, are pinned in tests/models/fewshot/test_methods.py."""

import hashlib

import pytest

from pdenets.experiments.task import get_task, job_key

#: (task, configuration) -> (number of jobs, the first 16 hex digits of SHA-256 over the sorted keys, joined
#: by commas), as the runs were stored before the device and the data folder left the job specs
PINNED = {
    ("coin-claims", "quick"): (3, "30ef59884e43bd86"),
    ("coin-claims", "default"): (3, "6ffcfd60707c4a98"),
    ("coin-forecast", "quick"): (32, "2bdebea49e3b4e23"),
    ("coin-forecast", "default"): (72, "c7ba957c7ad526eb"),
    ("coin-tabular", "quick"): (45, "8bfc32d62fc1e45e"),
    ("coin-tabular", "default"): (450, "d066f2fae9587852"),
    ("geodesic", "quick"): (6, "40490316cff4a92c"),
    ("geodesic", "default"): (14, "50fd35c05b1eb8c7"),
    ("image-classification", "quick"): (3, "f358c10432785f5b"),
    ("image-classification", "default"): (18, "47de80ffdd2f1d56"),
    ("node-classification", "quick"): (2, "8feea4a1fe66697d"),
    ("node-classification", "default"): (2000, "f87c9fb8cfa44eab"),
    ("synthetic", "quick"): (17, "8795ae21e34d5285"),
    ("synthetic", "default"): (133, "40ffc8a661bc4d53"),
}


@pytest.mark.parametrize("task, kind", sorted(PINNED))
def test_the_keys_of_the_quick_and_default_configurations_stay(task, kind, tmp_path, monkeypatch):
    monkeypatch.setenv("PDENETS_DATA", str(tmp_path))  # planning reads no data file
    cls = get_task(task)
    config = cls.quick_config() if kind == "quick" else cls.config_class()
    keys = sorted(job_key(task, job) for job in cls(config).jobs())
    digest = hashlib.sha256(",".join(keys).encode()).hexdigest()[:16]
    assert (len(keys), digest) == PINNED[(task, kind)]


def test_the_device_asked_for_does_not_enter_a_key(tmp_path, monkeypatch):
    """The device is the run's context: a configuration on another device plans the same keys."""
    monkeypatch.setenv("PDENETS_DATA", str(tmp_path))
    for task in ("synthetic", "node-classification", "coin-forecast"):
        cls = get_task(task)
        here = [job_key(task, job) for job in cls(cls.quick_config()).jobs()]
        elsewhere = cls.quick_config()
        object.__setattr__(elsewhere, "device", "cuda:3")  # planned, never validated or run here
        assert [job_key(task, job) for job in cls(elsewhere).jobs()] == here, task
