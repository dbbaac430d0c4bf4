"""Every registered task has a spec guard: a test that runs ``assert_every_key_setting_matters`` on its jobs.

A new task without one fails here, naming the task; a guard renamed or deleted fails too.
"""

import ast
from pathlib import Path

from pdenets.experiments.task import registered_tasks

HERE = Path(__file__).resolve().parent

#: task → (test file, test function) that runs the guard on the task's jobs.
GUARDS = {
    "coin-claims": ("coin_claims/test_task.py", "test_every_setting_of_a_claim_job_reaches_the_result"),
    "coin-forecast": (
        "coin_forecast/test_task.py",
        "test_every_setting_of_a_forecast_job_reaches_the_result",
    ),
    "coin-tabular": ("coin_tabular/test_task.py", "test_every_setting_of_a_tabular_job_reaches_the_result"),
    "few-shot": ("fewshot/test_task.py", "test_every_setting_of_an_episode_job_reaches_the_result"),
    "geodesic": ("geodesic/test_task.py", "test_every_setting_of_a_geodesic_job_reaches_the_result"),
    "image-classification": (
        "image_classification/test_task.py",
        "test_every_setting_of_an_image_job_reaches_the_result",
    ),
    "node-classification": (
        "node_classification/test_task.py",
        "test_every_setting_of_a_node_job_reaches_the_result",
    ),
    "synthetic": ("synthetic/test_task.py", "test_every_setting_of_a_synthetic_job_reaches_the_result"),
}


def _calls_the_guard(path: Path, function: str) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            return any(
                isinstance(call, ast.Call)
                and getattr(call.func, "id", None) == "assert_every_key_setting_matters"
                for call in ast.walk(node)
            )
    return False


def test_every_registered_task_has_a_spec_guard():
    tasks = {name for name, task in registered_tasks().items() if task.__module__.startswith("pdenets.")}
    missing = sorted(tasks - set(GUARDS))
    assert not missing, (
        f"task(s) {missing} have no spec guard: add a test calling assert_every_key_setting_matters "
        "on their jobs (tests/helpers/spec_sensitivity.py) and list it in GUARDS"
    )
    broken = [
        task for task, (file, function) in GUARDS.items() if not _calls_the_guard(HERE / file, function)
    ]
    assert not broken, (
        f"the guard tests of {broken} are gone or no longer call assert_every_key_setting_matters"
    )
