"""Building blocks of hostile pickles: how a tampered file spells a call or an array."""


class Reduced:
    """Pickles as ``function(*arguments)`` then ``BUILD state`` (when a state is given)."""

    def __init__(self, function, arguments, state=None):
        self.reduced = (function, arguments) if state is None else (function, arguments, state)

    def __reduce__(self):
        return self.reduced


def multiarray(name):
    """``numpy._core.multiarray.<name>`` (``numpy.core`` on numpy 1.x), where numpy's pickles point."""
    try:
        from numpy._core import multiarray as module
    except ImportError:  # numpy 1.x
        from numpy.core import multiarray as module
    return getattr(module, name)
