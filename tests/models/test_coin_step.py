"""The closed-form step of a COIN over an MLP is autograd's: the loss and every parameter's gradient agree in
float64, with dropout (the same masks from the same generator), one to three layers, with diffusion and
without, a graph whose rows do not sum to one; models of other shapes get no step."""

import pytest
import torch
from torch import nn

from pdenets.models import COIN, coin_mlp
from pdenets.models.coin_step import CoinMLPStep

from ..conftest import random_symmetric_weights


def _autograd(net, x, rows, labels):
    net.zero_grad()
    loss = nn.functional.cross_entropy(net(x)[rows], labels[rows])
    loss.backward()
    return float(loss.detach()), [p.grad.clone() for p in net.parameters()]


@pytest.mark.parametrize("layers", [1, 2, 3])
@pytest.mark.parametrize("num_steps", [0, 3])
@pytest.mark.parametrize("dropout", [0.0, 0.35])
def test_the_closed_form_step_is_autograds(layers, num_steps, dropout):
    weights = random_symmetric_weights(30, density=0.3, seed=1)
    net = coin_mlp(
        5, 4, hidden_features=7, num_layers=layers, dropout=dropout, graph=weights, step_size=0.05,
        num_steps=num_steps,
    ).double()  # fmt: skip
    x = torch.randn(30, 5, dtype=torch.float64)
    rows, labels = torch.tensor([0, 4, 9, 17, 23]), torch.randint(0, 4, (30,))
    step = CoinMLPStep.of(net)
    assert step is not None
    net.train()
    torch.manual_seed(7)
    expected_loss, expected = _autograd(net, x, rows, labels)
    net.zero_grad()
    torch.manual_seed(7)  # the same dropout masks
    loss = step.loss_and_gradients(x, rows, labels)
    assert loss == pytest.approx(expected_loss, rel=1e-12, abs=1e-12)
    for parameter, theirs in zip(net.parameters(), expected):
        torch.testing.assert_close(parameter.grad, theirs, rtol=1e-10, atol=1e-12)


def test_models_of_other_shapes_get_no_step():
    weights = random_symmetric_weights(10, density=0.4)
    tanh = COIN(
        nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 4)), graph=weights, head=nn.Linear(4, 2)
    )
    normalized = coin_mlp(
        3, 2, hidden_features=4, graph=weights, step_size=0.1, num_steps=2, laplacian="normalized"
    )
    learned = coin_mlp(
        3, 2, hidden_features=4, graph=weights, step_size=0.1, num_steps=2, learn_step_size=True
    )
    no_head = COIN(nn.Sequential(nn.Linear(3, 4)), graph=weights)
    for model in (tanh, normalized, learned, no_head, nn.Linear(3, 2)):
        assert CoinMLPStep.of(model) is None


def test_a_loss_that_is_not_finite_is_returned_and_sets_no_gradient():
    net = coin_mlp(3, 2, hidden_features=4, graph=random_symmetric_weights(6, density=0.5), num_steps=1,
                   step_size=0.05).double()  # fmt: skip
    step = CoinMLPStep.of(net)
    x = torch.full((6, 3), float("inf"), dtype=torch.float64)
    loss = step.loss_and_gradients(x, torch.tensor([0, 1]), torch.tensor([0, 1, 0, 1, 0, 1]))
    assert not torch.isfinite(torch.tensor(loss)) and all(p.grad is None for p in net.parameters())
