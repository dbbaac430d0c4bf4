import json
import math
from dataclasses import dataclass, field
from typing import Dict, List

import pytest

from pdenets.experiments.config import apply_overrides, load_config
from pdenets.experiments.report import Report, format_number
from pdenets.experiments.rundir import RunDirectory


@dataclass
class _Config:
    epochs: int = 10
    rate: float = 0.5
    name: str = "a"
    flags: List[int] = field(default_factory=lambda: [1, 2])
    nested: Dict[str, Dict[str, float]] = field(default_factory=lambda: {"moon": {"steps": 60}})
    enabled: bool = True


def test_overrides_parse_yaml_values_and_nested_keys():
    config = apply_overrides(_Config(), ["epochs=3", "rate=1", "flags=[4, 5]", "nested.moon.steps=7",
                                         "enabled=false", "name=b"])
    assert (config.epochs, config.rate, config.flags, config.nested["moon"]["steps"], config.enabled,
            config.name) == (3, 1.0, [4, 5], 7, False, "b")
    assert isinstance(config.rate, float)


@pytest.mark.parametrize("override, message", [
    ("epochs", "key=value"),
    ("epoch=3", "unknown config key"),
    ("epochs=many", "expects int"),
    ("nested.circle.steps=1", "unknown config key"),
    ("enabled=3", "true/false"),
])
def test_bad_overrides(override, message):
    with pytest.raises(ValueError, match=message):
        apply_overrides(_Config(), [override])


def test_load_config_from_yaml_and_from_run_config(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("epochs: 4\n")
    assert load_config(_Config, path).epochs == 4
    run = RunDirectory(tmp_path / "run")
    run.write_config("demo", {"epochs": 6})
    assert load_config(_Config, run.file("config.yaml")).epochs == 6
    path.write_text("unknown: 1\n")
    with pytest.raises(ValueError, match="unknown config key"):
        load_config(_Config, path)


def test_results_json_has_no_nan(tmp_path):
    run = RunDirectory(tmp_path)
    run.write_results({"a": math.nan, "b": [1.0, math.inf], "c": {"d": 2}})
    assert json.loads(run.file("results.json").read_text()) == {"a": None, "b": [1.0, None], "c": {"d": 2}}


def test_report_markdown_and_html(tmp_path):
    report = Report("Title <x>")
    report.heading("Part")
    report.paragraph("Use `pdenets` **now**.")
    report.table(["k", "v"], [["a", 0.12345], ["b", 3]], caption="cap")
    report.figure("plot.png", "a plot")
    report.bullets(["one"])
    report.code("make run")
    md_path, html_path = report.write(tmp_path)
    markdown = md_path.read_text()
    page = html_path.read_text()
    assert "| a | 0.123 |" in markdown and "![a plot](plot.png)" in markdown
    assert "Title &lt;x&gt;" in page and "<code>pdenets</code>" in page and "<strong>now</strong>" in page
    assert '<img src="plot.png"' in page and "<td>0.123</td>" in page


def test_format_number():
    assert format_number(1234567.0) == "1.23e+06"
    assert format_number(0.5) == "0.500"
    assert format_number(None) == "—" and format_number(True) == "yes" and format_number(float("nan")) == "nan"
