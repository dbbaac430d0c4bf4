"""Renamed keyword arguments: the old name still works for a while, with a ``DeprecationWarning``.

Every rename is listed in ``CHANGELOG.md`` (section *Deprecated*) with the release that removes it.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, Dict, TypeVar

__all__ = ["renamed_arguments", "apply_renames"]

F = TypeVar("F", bound=Callable[..., Any])


def renamed_arguments(**renames: str) -> Callable[[F], F]:
    """Decorator: accept each deprecated keyword ``old`` as ``new`` (``old="new"``), warning once per call.

    Passing both names is an error. The wrapped callable keeps its signature and docstring
    (``inspect.signature`` shows the new names only).

    Args:
        **renames: ``old_name="new_name"`` pairs.

    Returns:
        The decorator.

    Examples:
        >>> import warnings
        >>> @renamed_arguments(hidden="hidden_features")
        ... def width(*, hidden_features: int = 8) -> int:
        ...     return hidden_features
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     width(hidden=4), caught[0].category.__name__
        (4, 'DeprecationWarning')
        >>> width(hidden=4, hidden_features=5)
        Traceback (most recent call last):
        ...
        TypeError: width() got 'hidden' and its new name 'hidden_features'; pass 'hidden_features' only
    """

    def decorator(function: F) -> F:
        name = function.__qualname__.replace(".__init__", "")

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in renames.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{name}() got {old!r} and its new name {new!r}; pass {new!r} only")
                    warnings.warn(
                        f"{name}(): the argument {old!r} is now {new!r}; {old!r} will be removed "
                        "(see CHANGELOG.md)",
                        DeprecationWarning,
                        stacklevel=2,
                    )
                    kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        wrapper.__renamed_arguments__ = dict(renames)  # type: ignore[attr-defined]  # read by create_model
        return wrapper  # type: ignore[return-value]  # functools.wraps keeps the signature, not the type

    return decorator


def apply_renames(function: Callable[..., Any], kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """``kwargs`` with the deprecated names of ``function`` (or of a class's ``__init__``) replaced, warning.

    For code that merges keyword arguments with defaults before the call (a registry's factory), so that an
    old name given by a caller is not passed beside a default under the new name.

    Args:
        function: a callable decorated with :func:`renamed_arguments`, or a class whose ``__init__`` is.
        kwargs: the caller's keyword arguments.

    Returns:
        A new dict (``kwargs`` itself is not changed).

    Examples:
        >>> import warnings
        >>> @renamed_arguments(hidden="hidden_features")
        ... def width(*, hidden_features: int = 8) -> int:
        ...     return hidden_features
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     apply_renames(width, {"hidden": 4})
        {'hidden_features': 4}
    """
    renames = getattr(function, "__renamed_arguments__", None)
    if renames is None:
        renames = getattr(getattr(function, "__init__", None), "__renamed_arguments__", {})
    if not any(old in kwargs for old in renames):
        return dict(kwargs)

    @renamed_arguments(**renames)
    def collect(**given: Any) -> Dict[str, Any]:
        return given

    collect.__qualname__ = getattr(function, "__qualname__", "function")
    return collect(**kwargs)
