"""A cache keyed on the identity of a large first argument: a trace's jobs or pods, hashed once per object, not per call.

functools.lru_cache hashes a tuple argument on every call, and a tuple does not keep its hash: for a million jobs that
is a walk over all of them each time the sensitivity table re-plans a window. Here the first argument is known by its
id (the entry holds the object itself, so that id is not reused while the entry lives); the rest are hashed as usual.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Concatenate, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")
R = TypeVar("R")


def by_first_identity(maxsize: int) -> Callable[[Callable[Concatenate[T, P], R]], Callable[Concatenate[T, P], R]]:
    """Memoise `fn(first, *args, **kwargs)` on (the object `first` is, args, kwargs), least recently used out past `maxsize`."""

    def wrap(fn: Callable[Concatenate[T, P], R]) -> Callable[Concatenate[T, P], R]:
        cache: OrderedDict[Hashable, tuple[T, R]] = OrderedDict()

        @functools.wraps(fn)
        def cached(first: T, *args: P.args, **kwargs: P.kwargs) -> R:
            key = (id(first), args, tuple(sorted(kwargs.items())))
            hit = cache.get(key)
            if hit is not None and hit[0] is first:
                cache.move_to_end(key)
                return hit[1]
            out = fn(first, *args, **kwargs)
            cache[key] = (first, out)
            if len(cache) > maxsize:
                cache.popitem(last=False)
            return out

        return cached

    return wrap
