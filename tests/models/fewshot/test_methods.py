"""Few-shot method names: ``laplacianshot`` and its former name ``diffusion`` (deprecated, same stored runs),
close matches for unknown names, and descriptions that say when to use each method."""

import warnings

import pytest

from pdenets._registry import Registry
from pdenets.experiments import job_key
from pdenets.experiments.config import ConfigError, RenamedSettingWarning
from pdenets.models.fewshot import (
    METHOD_CLASSES,
    PREPROCESSING,
    Ensemble,
    LaplacianShot,
    method_from_name,
    registered_methods,
    stored_method_name,
)
from pdenets.tasks.fewshot.config import FewShotConfig
from pdenets.tasks.fewshot.task import EpisodeJob, OfficialRunsJob


def _episode_job(method: str) -> EpisodeJob:
    settings = method_from_name(method).settings
    return EpisodeJob(
        study="ablation",
        dataset="omniglot",
        fingerprint="abc",
        ways=5,
        shots=1,
        queries=15,
        first_task=0,
        last_task=250,
        seed=0,
        method=method,
        settings=settings,
        preprocessing=PREPROCESSING["normalize"],
        variable=None,
    )


#: the keys of these jobs when LaplacianShot was registered as "diffusion": runs stored then are found now
PINNED_KEYS = {
    "laplacianshot": "138164771552f261e11e1564",
    "ensemble": "ce416291e613b5acf6a0f5d8",
    "prototype": "b093cca622512d93c6d89684",
}
PINNED_OFFICIAL_KEYS = {
    "laplacianshot": "06f2781e796176e0b420ba8d",
    "ensemble": "4176e2f43dfee344be8056ff",
}


def test_laplacianshot_is_the_name_and_diffusion_a_deprecated_one():
    assert "laplacianshot" in registered_methods() and "diffusion" not in registered_methods()
    with pytest.warns(DeprecationWarning, match="'diffusion' is now called 'laplacianshot'"):
        method = method_from_name("diffusion", lam=0.3)
    assert isinstance(method, LaplacianShot) and method.settings.lam == 0.3
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the current name warns of nothing
        assert isinstance(method_from_name("laplacianshot"), LaplacianShot)
    assert stored_method_name("laplacianshot") == "diffusion"
    assert stored_method_name("pt-map") == "pt-map"


@pytest.mark.parametrize("method", sorted(PINNED_KEYS))
def test_the_rename_keeps_every_stored_runs_key(method):
    assert job_key("few-shot", _episode_job(method)) == PINNED_KEYS[method]
    if method in PINNED_OFFICIAL_KEYS:
        job = OfficialRunsJob(
            fingerprint="abc",
            method=method,
            settings=method_from_name(method).settings,
            preprocessing=PREPROCESSING["tricks"],
        )
        assert job_key("few-shot", job) == PINNED_OFFICIAL_KEYS[method]


def test_a_config_of_an_older_run_reads_the_former_name_as_the_new_one():
    config = FewShotConfig(methods=["prototype", "diffusion"], method_settings={"diffusion": {"lam": 0.3}})
    with pytest.warns(RenamedSettingWarning, match="method_settings: the few-shot method 'diffusion' is now"):
        config.validate()
    assert config.methods == ["prototype", "laplacianshot"]
    assert config.method("laplacianshot").settings.lam == 0.3


def test_an_ensemble_member_by_its_former_name_is_the_same_ensemble():
    with pytest.warns(DeprecationWarning):
        old = Ensemble(members=("diffusion", "prototype"), weights=(1.0, 1.0))
    new = Ensemble(members=("laplacianshot", "prototype"), weights=(1.0, 1.0))
    assert old.settings == new.settings and old.settings.members == ("laplacianshot", "prototype")


@pytest.mark.parametrize("typed", ["laplacian-shot", "laplaceshot", "LaplacianShot"])
def test_an_unknown_method_is_answered_with_the_close_match(typed):
    with pytest.raises(ConfigError, match=r"did you mean 'laplacianshot'\?"):
        FewShotConfig(methods=[typed]).validate()
    with pytest.raises(KeyError, match=r"did you mean 'laplacianshot'\?"):
        method_from_name(typed)


def test_every_built_in_method_says_when_to_use_it():
    for name in registered_methods():
        if METHOD_CLASSES.source(name) != "built-in":
            continue
        description = METHOD_CLASSES.description(name)
        assert any(word in description for word in ("for ", "when ", "only", "default")), (name, description)


def test_a_registry_rename_is_refused_where_it_cannot_mean_anything():
    colours = Registry("test-colours-renamed", kind="colour")
    try:
        colours.register("red", 1, module="paints")
        colours.register("crimson", 2, module="paints")
        colours.rename("scarlet", "red")
        colours.rename("crimson", "red")  # a name with an entry of its own stays that entry
        with pytest.warns(DeprecationWarning, match="'scarlet' is now called 'red'"):
            assert colours["scarlet"] == 1
        assert colours["crimson"] == 2 and list(colours) == ["red", "crimson"]
        for old in ("", "red", None):
            with pytest.raises(ValueError, match="former colour name"):
                colours.rename(old, "red")
    finally:
        colours.forget()
