"""Results remembered in this process and kept on disk: one class for both, and one codec for the entries.

    EMBEDDINGS = CachedResults("behaviour", Embeddings)
    EMBEDDINGS.get(name, compute, disk_key=lambda: digest(model_key(), "embeddings", name))

`CachedResults.get` looks in memory, then (given a disk key) in the on-disk cache of
lab.study.cache, and computes only when both miss; what it computes is remembered and stored.
The key is the caller's: it names everything that decides the result, and is worked out only on
a memory miss, since a key may hash a model's files.

Entries are written by `to_json` and read back by `from_json` as the result's type says, so a
dataclass of numpy arrays, floats, ints, strings, tuples, dicts and nested dataclasses comes back
equal, arrays bit for bit (lab.study.cache.encode_array). An entry that does not read back as that
type (damaged, or written by other code) is a miss, and the result is computed and stored again.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np

from lab.study import cache as result_cache

T = TypeVar("T")


def to_json(value) -> Any:
    """A result as JSON-able lists, dicts and numbers: dataclasses by field, arrays by encode_array."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {item.name: to_json(getattr(value, item.name)) for item in dataclasses.fields(value)}
    if isinstance(value, np.ndarray):
        return result_cache.encode_array(value)
    if isinstance(value, Mapping):
        return {str(key): to_json(item) for key, item in value.items()}
    if isinstance(value, (tuple, list)):
        return [to_json(item) for item in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _expect(entry, kinds, what) -> None:
    if not isinstance(entry, kinds) or (isinstance(entry, bool) and bool not in kinds):
        raise TypeError(f"a cached {what} is {type(entry).__name__}")


#: what each plain type's entry may be: JSON writes a float that is whole (1.0) as itself, never as 1
_PLAIN = {float: (float, int), int: (int,), str: (str,), bool: (bool,)}


def from_json(entry, kind) -> Any:
    """The value to_json wrote, read back as `kind` (a dataclass, np.ndarray, tuple[...], dict[str, ...],
    X | None, float, int, str, bool, or Any); TypeError, KeyError or ValueError where it is not one."""
    origin, arguments = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return entry
    if origin in (typing.Union, types.UnionType):
        if entry is None and type(None) in arguments:
            return None
        (inner,) = (argument for argument in arguments if argument is not type(None))
        return from_json(entry, inner)
    if dataclasses.is_dataclass(kind):
        _expect(entry, dict, kind.__name__)
        hints = typing.get_type_hints(kind)
        names = [item.name for item in dataclasses.fields(kind)]
        if sorted(entry) != sorted(names):
            raise KeyError(f"a cached {kind.__name__} has the fields {sorted(entry)}, not {sorted(names)}")
        return kind(**{name: from_json(entry[name], hints[name]) for name in names})
    if kind is np.ndarray:
        _expect(entry, dict, "array")
        return result_cache.decode_array(entry, entry["dtype"], (None,) * len(entry["shape"]))
    if kind in _PLAIN:
        _expect(entry, _PLAIN[kind], kind.__name__)
        return kind(entry)
    if (origin or kind) in (dict, Mapping):
        _expect(entry, dict, "mapping")
        item = arguments[1] if arguments else Any
        return {key: from_json(value, item) for key, value in entry.items()}
    if (origin or kind) in (tuple, list):
        _expect(entry, list, "sequence")
        if origin is list or (len(arguments) == 2 and arguments[1] is Ellipsis):
            items = [from_json(value, arguments[0]) for value in entry]
        elif arguments:
            if len(entry) != len(arguments):
                raise ValueError(f"a cached tuple has {len(entry)} items, not {len(arguments)}")
            items = [from_json(value, argument) for value, argument in zip(entry, arguments, strict=True)]
        else:
            items = list(entry)
        return tuple(items) if (origin or kind) is tuple else items
    raise TypeError(f"results of type {kind} have no JSON form here")


class CachedResults(Generic[T]):
    """Results of one type by name: remembered in this process and, where a caller gives a disk key,
    kept in the on-disk cache's `namespace`. `remember=False` keeps nothing in memory (a result
    that is large, or that a caller wants computed afresh whenever the disk has none)."""

    def __init__(self, namespace: str, kind, *, remember: bool = True) -> None:
        self.namespace = namespace
        self.kind = kind
        self.remember = remember
        self._memory: dict[Hashable, T] = {}

    def get(
        self,
        name: Hashable,
        compute: Callable[[], T],
        *,
        disk_key: Callable[[], str] | None = None,
        folder: Path | None = None,
        on_load: Callable[[T], object] | None = None,
    ) -> T:
        """The result called `name`: from memory, else from disk under disk_key() (none without a
        disk_key), else compute(), which is then stored. `on_load(result)` is called for a result
        read from disk, so that a progress bar moves once for the work it saved."""
        if name in self._memory:
            return self._memory[name]
        key = disk_key() if disk_key is not None else None
        found = self.load(key, folder) if key is not None else None
        if found is not None:
            if on_load is not None:
                on_load(found)
        else:
            found = compute()
            if key is not None:
                self.store(key, found, folder)
        if self.remember:
            self._memory[name] = found
        return found

    def load(self, key: str, folder: Path | None = None) -> T | None:
        """The result stored under key, or None when there is none or it does not read back as one."""
        return result_cache.ResultCache(self.namespace, folder).load_as(key, lambda entry: from_json(entry, self.kind))

    def store(self, key: str, value: T, folder: Path | None = None) -> None:
        result_cache.ResultCache(self.namespace, folder).store(key, to_json(value))

    def clear(self) -> None:
        """Forget what this process remembered (the disk keeps its entries)."""
        self._memory.clear()

    def __len__(self) -> int:
        return len(self._memory)
