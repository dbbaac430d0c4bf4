"""Reading a run's results store with pandas.

Every run of a task is stored the moment it finishes in ``results.sqlite`` (a table ``runs``: the key, the
task's queryable columns, the job spec and the record as JSON), so your own analysis does not wait for the
report or depend on it. Here a quick ``coin-tabular`` run (COIN, an MLP and label spreading with few labels
on scikit-learn's breast-cancer table, 45 runs) is read into a DataFrame: its columns, a pivot table of the
accuracy, and a box plot per model — with plain pandas (``pip install pandas``).
"""

import dataclasses
import json
import sqlite3
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from pdenets.experiments import run_task
from pdenets.tasks.coin_tabular.task import CoinTabularTask

folder = Path(tempfile.mkdtemp()) / "tabular"
config = dataclasses.replace(CoinTabularTask.quick_config(), workers=1)  # in this process: a script's runs
outcome = run_task(CoinTabularTask(config), out=folder, progress=False)
print(f"{outcome.stored} runs stored in {folder / 'results.sqlite'}")

with sqlite3.connect(folder / "results.sqlite") as connection:
    runs = pd.read_sql_query("SELECT * FROM runs WHERE status = 'ok'", connection)
print("columns:", ", ".join(runs.columns))
runs["splits"] = runs["spec"].map(lambda text: json.loads(text)["split"])  # any field of the job spec
print(f"{runs['splits'].nunique()} splits, models {sorted(runs['model'].unique())}")
table = runs.pivot_table(index="labels_per_class", columns="model", values="accuracy", aggfunc="mean")
print((100 * table).round(1).to_string())

fig, ax = plt.subplots(figsize=(5.5, 3.2), layout="constrained")
models = sorted(runs["model"].unique())
ax.boxplot([runs.loc[runs["model"] == m, "accuracy"] for m in models], tick_labels=models)
ax.set_ylabel("accuracy on the unlabelled rows")
ax.set_title(f"{runs['dataset'].iloc[0]}: {len(runs)} runs read from results.sqlite")
fig.savefig("read_the_results_store_with_pandas.png", dpi=110)
