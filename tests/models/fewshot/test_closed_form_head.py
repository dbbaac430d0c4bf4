"""The prototype-initialized head's SGD in closed form (first layer factored) is torch's SGD by autograd."""

import pytest
import torch
from torch.nn import functional as F

from pdenets.models.fewshot.closed_form_head import train_prototype_heads


def _autograd_sgd(inputs, labels, rows, parameters, rates, momentum, weight_decay):
    parameters = [p.clone().requires_grad_() for p in parameters]
    optimizer = torch.optim.SGD(parameters, lr=rates[0], momentum=momentum, weight_decay=weight_decay)
    for rate in rates:
        for group in optimizer.param_groups:
            group["lr"] = rate
        optimizer.zero_grad()
        w1, b1, w2, b2, w3, b3 = parameters
        hidden = torch.relu(inputs @ w1.transpose(1, 2) + b1[:, None])
        undiffused = (inputs + hidden @ w2.transpose(1, 2) + b2[:, None]) @ w3.transpose(1, 2)
        support = labels.shape[1]
        outputs = (undiffused[:, :support] if rows is None else rows @ undiffused) + b3[:, None]
        losses = F.cross_entropy(outputs.reshape(-1, outputs.shape[2]), labels.reshape(-1), reduction="none")
        losses.reshape(labels.shape).mean(1).sum().backward()
        optimizer.step()
    return [p.detach() for p in parameters]


def _start(tasks=3, points=11, width=7, ways=3, seed=0):
    generator = torch.Generator().manual_seed(seed)

    def draw(*shape):
        return torch.randn(*shape, generator=generator, dtype=torch.float64)

    inputs = draw(tasks, points, width)
    labels = torch.randint(0, ways, (tasks, 5), generator=generator)
    rows = torch.softmax(draw(tasks, 5, points), 2)  # rows summing to one, as (I − γL)^r's
    parameters = [
        draw(tasks, width, width),
        draw(tasks, width),
        torch.zeros(tasks, width, width, dtype=torch.float64),
        torch.zeros(tasks, width, dtype=torch.float64),
        draw(tasks, ways, width),
        draw(tasks, ways),
    ]
    return inputs, labels, rows, parameters


@pytest.mark.parametrize("diffused", [True, False])
@pytest.mark.parametrize("momentum, weight_decay", [(0.9, 1e-4), (0.0, 0.0), (0.5, 0.05)])
def test_the_closed_form_steps_are_autograds_sgd(diffused, momentum, weight_decay):
    inputs, labels, rows, parameters = _start()
    rows = rows if diffused else None
    rates = [0.3, 0.3, 0.3, 0.03, 0.03, 0.003]
    ours = train_prototype_heads(inputs, labels, rows, parameters, rates, momentum, weight_decay)
    expected = _autograd_sgd(inputs, labels, rows, parameters, rates, momentum, weight_decay)
    for name, value, reference in zip(("W1", "b1", "W2", "b2", "W3", "b3"), ours, expected):
        torch.testing.assert_close(value, reference, rtol=1e-10, atol=1e-12, msg=name)
    assert float(ours[2].abs().max()) > 1e-3  # the residual branch was trained: W2 is not left at zero
    assert all(p.abs().max() > 0 for p in parameters[:2]) and not parameters[2].any()  # the start is kept


def test_more_points_than_features_and_a_branch_that_is_on_are_handled_or_refused():
    inputs, labels, rows, parameters = _start(points=20, width=4)  # N > M: the factored layer still holds
    ours = train_prototype_heads(inputs, labels, rows, parameters, [0.2] * 4, 0.9, 1e-3)
    expected = _autograd_sgd(inputs, labels, rows, parameters, [0.2] * 4, 0.9, 1e-3)
    torch.testing.assert_close(ours[0], expected[0], rtol=1e-10, atol=1e-12)
    parameters[3] = parameters[3] + 1.0
    with pytest.raises(ValueError, match="W2 = 0, b2 = 0"):
        train_prototype_heads(inputs, labels, rows, parameters, [0.2], 0.9, 1e-3)
