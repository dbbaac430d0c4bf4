"""Image trees (folders and zips), the offline Omniglot and CLINC150 data, and the features command."""

import torch
from datafiles import OMNIGLOT, OMNIGLOT_RUNS, requires_data


@requires_data(*OMNIGLOT, OMNIGLOT_RUNS)
def test_omniglot_offline_files():
    from pdenets.data.omniglot import BASE_ALPHABETS, NOVEL_ALPHABETS, load_one_shot_runs, omniglot_images

    novel = omniglot_images(NOVEL_ALPHABETS)
    assert len(novel.class_names) == 106 and len(novel) == 2120
    assert set(torch.bincount(novel.labels).tolist()) == {20}
    assert {name.split("/")[0] for name in novel.class_names} == set(NOVEL_ALPHABETS)
    base_names = set(omniglot_images(BASE_ALPHABETS).class_names)
    assert len(base_names) == 136 and not base_names & set(novel.class_names)
    runs = load_one_shot_runs()
    assert len(runs) == 20 and all(
        r.training.shape == (20, 1, 28, 28) and sorted(r.answers.tolist()) == list(range(20)) for r in runs
    )
