"""Track recording leaves the model untouched, groups stages by width; plain and ResNet pairs differ by the
skip."""

import pytest
import torch
from torch import nn

from pdenets.analysis.tracks import project_tracks, record_tracks
from pdenets.analysis.transport import line_shape_score
from pdenets.models.transport_pairs import TransportBlock, TransportCNN, TransportMLP


def test_tracks_are_the_block_inputs_and_outputs_in_order(device):
    torch.manual_seed(0)
    net = TransportMLP(6, 3, width=5, num_blocks=3).double().to(device)
    x = torch.randn(40, 6, dtype=torch.float64).to(device)
    (stage,) = record_tracks(net, x, blocks=TransportBlock, batch_size=7)
    assert stage.blocks == ["blocks.0", "blocks.1", "blocks.2"] and stage.tracks.shape == (40, 4, 5)
    expected = [net.input(x)]
    for block in net.blocks:
        expected.append(block(expected[-1]))
    torch.testing.assert_close(stage.tracks, torch.stack(expected, 1).float().cpu())  # tracks: on the CPU


def test_hooks_leave_outputs_and_gradients_unchanged_and_are_removed(device):
    torch.manual_seed(1)
    net = TransportMLP(6, 3, width=5, num_blocks=2).to(device)
    x, y = torch.randn(30, 6).to(device), torch.randint(0, 3, (30,)).to(device)
    net.train()
    before = net(x)
    nn.functional.cross_entropy(before, y).backward()
    grads = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    record_tracks(net, x, blocks=TransportBlock)
    assert net.training  # the mode is restored
    after = net(x)
    nn.functional.cross_entropy(after, y).backward()
    assert torch.equal(before, after)
    assert all(torch.equal(g, p.grad) for g, p in zip(grads, net.parameters()))
    assert all(not block._forward_hooks for block in net.blocks)


def test_stages_of_different_widths_are_kept_apart(device):
    torch.manual_seed(2)
    net = TransportCNN(3, 4, widths=(4, 6), blocks=2, stem_stride=1, image_size=8).to(device)
    stages = record_tracks(
        net, torch.randn(10, 3, 8, 8).to(device), blocks=lambda name, m: isinstance(m, TransportBlock)
    )
    assert [s.tracks.shape for s in stages] == [(10, 3, 4 * 8 * 8), (10, 3, 6 * 4 * 4)]
    assert all(torch.isfinite(line_shape_score(s.tracks)).all() for s in stages)


def test_subsampling_budget_and_bad_inputs(device):
    net = TransportMLP(6, 3, width=5, num_blocks=2).to(device)
    x = torch.randn(50, 6).to(device)
    (stage,) = record_tracks(net, x, blocks=TransportBlock, max_points=12, subsample_seed=3)
    (again,) = record_tracks(net, x, blocks=TransportBlock, max_points=12, subsample_seed=3)
    assert stage.tracks.shape[0] == 12 and torch.equal(stage.tracks, again.tracks)
    (first,) = record_tracks(
        net,
        torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x[:, 0]), batch_size=8),
        blocks=TransportBlock,
        max_points=20,
    )
    assert first.tracks.shape[0] == 20
    with pytest.raises(MemoryError, match="max_points"):
        record_tracks(net, x, blocks=TransportBlock, max_bytes=100)
    with pytest.raises(ValueError, match="no module named 'blocks.7'"):
        record_tracks(net, x, blocks=["blocks.7"])
    with pytest.raises(ValueError, match="no module of the model matches"):
        record_tracks(net, x, blocks=nn.Conv2d)
    with pytest.raises(TypeError, match="blocks must be"):
        record_tracks(net, x, blocks=3)


def test_random_projection_is_one_linear_map_and_keeps_straight_tracks_straight(device):
    # device: needs project_tracks to move its Gaussian matrix G (drawn on the CPU) to the tracks' device
    start, end = torch.randn(20, 1, 30, dtype=torch.float64), torch.randn(20, 1, 30, dtype=torch.float64)
    start, end = start.to(device), end.to(device)
    times = torch.linspace(0, 1, 6, dtype=torch.float64, device=device)
    straight = start + times[None, :, None] * (end - start)
    seen = project_tracks(straight, 2, seed=5)
    matrix = torch.randn(2, 30, generator=torch.Generator().manual_seed(5), dtype=torch.float64).to(device)
    torch.testing.assert_close(seen, straight @ matrix.T)
    torch.testing.assert_close(line_shape_score(seen), torch.ones(20, dtype=torch.float64, device=device))
    assert not torch.equal(project_tracks(straight, 2, seed=6), seen)
    with pytest.raises(ValueError, match=r"\(m, n \+ 1, d\)"):
        project_tracks(torch.randn(4, 5).to(device))
    with pytest.raises(ValueError, match="dim"):
        project_tracks(straight, 0)


def test_a_block_that_changes_the_width_is_never_dropped_silently(device):
    net = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 6), nn.Linear(6, 6)).to(device)
    x = torch.randn(5, 4).to(device)
    with pytest.raises(ValueError, match=r"block\(s\) 1 \(4 -> 6 features\) change the width"):
        record_tracks(net, x, blocks=["0", "1", "2"])
    with pytest.warns(UserWarning, match=r"1 \(4 -> 6 features\)"):
        stages = record_tracks(net, x, blocks=nn.Linear)
    assert [stage.blocks for stage in stages] == [["0"], ["2"]]
