import numpy as np
import pytest
import torch

from pdenets.data import make_circles, make_moons, make_spirals, make_synthetic, make_xor, resolve_data_dir


@pytest.mark.parametrize("name", ["moon", "circle", "spiral"])
def test_shapes_balance_and_determinism(name):
    first = make_synthetic(name, 50, seed=3)
    again = make_synthetic(name, 50, seed=3)
    other = make_synthetic(name, 50, seed=4)
    assert first.points.shape == (100, 2) and first.points.dtype == torch.float64
    assert torch.bincount(first.labels).tolist() == [50, 50]
    assert torch.equal(first.points, again.points)
    assert not torch.equal(first.points, other.points)


def test_xor_discs_and_labels():
    data = make_xor(100, seed=1)
    centres = torch.tensor([[0.0, 0.0], [2.0, 2.0], [0.0, 2.0], [2.0, 0.0]], dtype=torch.float64)
    assert torch.all((data.points - centres[data.groups]).norm(dim=1) <= 0.75)
    assert torch.equal(data.labels, torch.tensor([0, 0, 1, 1]).repeat_interleave(100))
    # uniform in area: about a quarter of the points lie within half the radius
    inner = ((data.points - centres[data.groups]).norm(dim=1) < 0.375).double().mean()
    assert 0.17 < inner < 0.33


def test_noise_free_curves_lie_on_their_curves():
    circles = make_circles(200, noise=0.0)
    radii = circles.points.norm(dim=1)
    assert torch.allclose(radii[:200], torch.full((200,), 2.0, dtype=torch.float64))
    assert torch.allclose(radii[200:], torch.ones(200, dtype=torch.float64))
    moons = make_moons(100, noise=0.0)
    assert torch.allclose(moons.points[:100].norm(dim=1), torch.ones(100, dtype=torch.float64))
    assert torch.allclose(
        (moons.points[100:] - torch.tensor([1.0, 0.5], dtype=torch.float64)).norm(dim=1),
        torch.ones(100, dtype=torch.float64),
    )
    spirals = make_spirals(100, noise=0.0, grid=True)
    theta = torch.linspace(0, 2 * np.pi, 100, dtype=torch.float64)
    assert torch.allclose(spirals.points[:100].norm(dim=1), 1 + theta)
    assert torch.allclose(spirals.points[100:], -spirals.points[:100])


def test_grid_with_legacy_numpy_seed_reproduces_script_layout():
    """The scripts draw all x-noise then all y-noise with numpy.random.seed."""
    data = make_circles(500, grid=True, seed=np.random.RandomState(42))
    np.random.seed(42)
    noise_x = np.random.randn(1000) * 0.05
    noise_y = np.random.randn(1000) * 0.05
    angle = np.linspace(0, 2 * np.pi, 500)
    x = np.append(2 * np.cos(angle), np.cos(angle)) + noise_x
    y = np.append(2 * np.sin(angle), np.sin(angle)) + noise_y
    assert np.allclose(data.points.numpy(), np.stack([x, y], 1))


def test_bad_requests():
    with pytest.raises(ValueError, match="unknown synthetic set"):
        make_synthetic("swiss-roll", 10)
    with pytest.raises(ValueError, match="positive int"):
        make_moons(0)


def test_data_dir_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("PDENETS_DATA", str(tmp_path))
    assert resolve_data_dir() == tmp_path
    assert resolve_data_dir(tmp_path / "x") == tmp_path / "x"
    monkeypatch.delenv("PDENETS_DATA")
    assert resolve_data_dir().name == "pdenets"
