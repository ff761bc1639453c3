"""The types of the extension module slabfs._slabfs (python/src/*.cc), for
type checkers. The dicts the module returns are TypedDicts here only: at run
time they are plain dicts. Parameters before a `/` are positional only
(the module calls them arg0, arg1, ...).
python/tests/test_stub.py checks this file against the built module: the
same functions, classes and members, with the same parameters."""
from typing import Any, List, Literal, Optional, Sequence, TypedDict

import numpy as np
from numpy.typing import NDArray

ObjectKind = Literal["group", "dataset"]


class DatasetInfo(TypedDict):
    dtype: str                              # "i1" ... "f8"
    shape: tuple[int, ...]
    maxshape: tuple[Optional[int], ...]     # None: unlimited
    chunks: tuple[int, ...]
    fill: bytes                             # one element, little-endian
    index: str                              # "single", "compact", "fixed", "extensible", "btree"
    filters: str                            # "shuffle,deflate=6,checksum"; "" for none
    sparse: bool
    length_resizable: bool
    num_chunks: int
    allocated_chunks: int
    stored_bytes: int
    index_bytes: int
    defined_elements: int


class ObjectStat(TypedDict):
    kind: ObjectKind
    num_children: int
    size_bytes: int
    stored_bytes: int


class RefreshInfo(TypedDict):
    generation: int
    changed: bool
    changed_objects: list[int]
    removed_objects: list[int]


class CacheStats(TypedDict):
    hits: int
    misses: int
    bytes_read: int
    bytes_written: int
    evictions: int
    bypass_reads: int
    bypass_writes: int
    extent_reads: int
    resident_bytes: int
    budget_bytes: int


class SpaceInfo(TypedDict):
    file_bytes: int
    free_bytes: int
    disk_free_bytes: int
    disk_total_bytes: int
    num_objects: int
    generation: int
    held_bytes: int


def version() -> str: ...
def set_log_level(level: str, /) -> None: ...
def _io_gil_state() -> int: ...
def _raise_for_test(code: str, context: str, filename: str, /) -> None: ...


class Container:
    # List, not list, in this class: its method `list` hides the builtin here.
    @staticmethod
    def open(path: str, read_only: bool, create: bool, cache_bytes: int, cache_max_bytes: int,
             holder: str) -> Container: ...
    def close(self, commit: bool = True) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def path(self) -> str: ...
    @property
    def read_only(self) -> bool: ...
    @property
    def dirty(self) -> bool: ...
    def commit(self) -> None: ...
    def refresh(self) -> RefreshInfo: ...
    def resolve(self, path: str, /) -> int: ...
    def lookup(self, parent: int, name: str, /) -> int: ...
    def stat(self, id: int, /) -> ObjectStat: ...
    def list(self, group: int, /) -> List[tuple[str, int, ObjectKind]]: ...
    def path_of(self, id: int, /) -> str: ...
    def create_group(self, parent: int, name: str, /) -> int: ...
    def make_groups(self, path: str, parents: bool, /) -> int: ...
    def create_dataset(self, parent: int, name: str, dtype: str, shape: Sequence[int],
                       maxshape: Sequence[Optional[int]], chunks: Sequence[int], fill: bytes, filters: str,
                       sparse: bool, index: str) -> DatasetHandle: ...
    def open_dataset(self, id: int, /) -> DatasetHandle: ...
    def remove(self, parent: int, name: str, /) -> None: ...
    def rename(self, from_parent: int, from_name: str, to_parent: int, to_name: str, no_replace: bool,
               /) -> None: ...
    def attr_names(self, id: int, /) -> List[str]: ...
    def get_attr(self, id: int, name: str, /) -> tuple[str, Optional[str], bytes]: ...
    def set_attr(self, id: int, name: str, kind: str, dtype: str, data: bytes, /) -> None: ...
    def del_attr(self, id: int, name: str, /) -> None: ...
    def cache_stats(self) -> CacheStats: ...
    def space(self) -> SpaceInfo: ...


class DatasetHandle:
    @property
    def id(self) -> int: ...
    @property
    def container(self) -> Container: ...
    def info(self) -> DatasetInfo: ...
    def read(self, start: Sequence[int], stride: Sequence[int], count: Sequence[int], out: NDArray[Any],
             mem_start: Optional[Sequence[int]] = None, mem_stride: Optional[Sequence[int]] = None,
             mem_count: Optional[Sequence[int]] = None) -> None: ...
    def write(self, start: Sequence[int], stride: Sequence[int], count: Sequence[int], src: NDArray[Any],
              mem_start: Optional[Sequence[int]] = None, mem_stride: Optional[Sequence[int]] = None,
              mem_count: Optional[Sequence[int]] = None) -> None: ...
    def resize(self, shape: Sequence[int], /) -> None: ...
    def clear(self) -> None: ...
    def erase(self, start: Sequence[int], stride: Sequence[int], count: Sequence[int], /) -> None: ...
    def defined(self, start: Sequence[int], count: Sequence[int],
                /) -> List[tuple[tuple[int, ...], tuple[int, ...]]]: ...
    def count_defined(self) -> int: ...
