"""Read a GGUF file (the llama.cpp format) with NumPy alone.

A GGUF file holds, in order:

1. a header: the magic bytes ``GGUF``, a version (2 or 3), the number of
   tensors and the number of metadata entries;
2. the metadata: key/value pairs (numbers, strings, arrays), for example
   ``llama.block_count`` or the tokenizer's vocabulary;
3. one record per tensor: name, dimensions, type and offset;
4. after padding to ``general.alignment`` bytes (default 32), the tensor data.

Weights are often *quantised*: stored in blocks of 32 numbers that share a
scale. This module reads the block types a small model needs (``F32``,
``F16``, ``Q4_0``, ``Q4_1``, ``Q8_0``) and turns them back into float32.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._validate import as_index_array, check_ndim, check_path

__all__ = ["GGUFError", "TensorInfo", "GGUFFile", "read_gguf", "dequantize", "BLOCKS"]

# Metadata value types of the GGUF format.
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
_MAX_DEPTH = 8  # arrays of arrays nested deeper than this are refused (real files use depth 1)
_MAX_DIMS = 4  # as in ggml (GGML_MAX_DIMS)

#: Tensor type id -> (name, numbers per block, bytes per block).
BLOCKS = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 8: ("Q8_0", 32, 34)}


class GGUFError(ValueError):
    """The file is not a GGUF file this reader understands (the message says why)."""


@dataclass(frozen=True)
class TensorInfo:
    """Where one tensor lives in the file.

    ``shape`` is in NumPy order (slowest axis first), the reverse of the
    dimension list GGUF stores: a matrix of ``ne0 = n_in`` columns and
    ``ne1 = n_out`` rows has ``shape == (n_out, n_in)``.
    """

    name: str
    shape: tuple
    type_id: int
    offset: int  # from the start of the file
    nbytes: int

    @property
    def type_name(self) -> str:
        return BLOCKS[self.type_id][0]

    @property
    def row_bytes(self) -> int:
        """Bytes of one row (the last axis) as stored."""
        _, per_block, block_bytes = BLOCKS[self.type_id]
        return self.shape[-1] // per_block * block_bytes


class _Cursor:
    """Reads little-endian values from a buffer, moving forward; never past its end."""

    def __init__(self, buffer, path):
        self.buf, self.pos, self.path = buffer, 0, path

    def fail(self, problem):
        return GGUFError(f"{self.path}: {problem}")

    def left(self) -> int:
        return len(self.buf) - self.pos

    def need(self, n, what):
        """Raise unless ``n`` more bytes are left for ``what``."""
        if n > self.left():
            raise self.fail(f"{what} needs {n} bytes at byte {self.pos}, but the file ends "
                            f"{self.left()} bytes later (truncated or corrupt)")

    def scalar(self, fmt):
        size = struct.calcsize(fmt)
        self.need(size, "a number")
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return value

    def count(self, fmt, what, min_item_bytes):
        """A count of ``what``, refused at once if that many items cannot fit in the rest of the file."""
        n = self.scalar(fmt)
        if n * min_item_bytes > self.left():
            each = f" (each needs at least {min_item_bytes})" if min_item_bytes > 1 else ""
            raise self.fail(f"the file claims {n} {what} at byte {self.pos}, but only {self.left()} bytes "
                            f"are left{each}: it is truncated or corrupt")
        return n

    def string(self):
        n = self.count("<Q", "bytes of a string", 1)
        raw = bytes(self.buf[self.pos:self.pos + n])
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"the string at byte {self.pos} is not valid UTF-8") from None
        self.pos += n
        return text

    def value(self, kind, depth=0):
        if kind in _SCALARS:
            return self.scalar(_SCALARS[kind])
        if kind == _STRING:
            return self.string()
        if kind != _ARRAY:
            raise self.fail(f"unknown metadata value type {kind} at byte {self.pos}")
        if depth >= _MAX_DEPTH:
            raise self.fail(f"arrays nested more than {_MAX_DEPTH} deep at byte {self.pos}")
        item = self.scalar("<I")
        if item not in _SCALARS and item not in (_STRING, _ARRAY):
            raise self.fail(f"an array at byte {self.pos} has unknown item type {item}")
        size = struct.calcsize(_SCALARS[item]) if item in _SCALARS else 8 if item == _STRING else 12
        n = self.count("<Q", "array items", size)
        if item in _SCALARS and item != 7:  # numbers: read them all at once
            out = np.frombuffer(self.buf, dtype=np.dtype(_SCALARS[item]), count=n, offset=self.pos).copy()
            self.pos += n * size
            return out
        return [self.value(item, depth + 1) for _ in range(n)]


def _alignment(metadata, path) -> int:
    align = metadata.get("general.alignment", 32)
    if isinstance(align, bool) or not isinstance(align, int) or align < 1 or align & (align - 1):
        raise GGUFError(f"{path}: general.alignment must be a positive power of two, got {align!r}")
    return align


class GGUFFile:
    """An open GGUF file: its metadata and a memory map of its tensors.

    Every count, size and offset is checked against the file's length before
    use, so a damaged file gives :class:`GGUFError` rather than a crash, a hang
    or a huge allocation.

    Attributes
    ----------
    path : Path
    version : int
    metadata : dict
        Key -> value (numbers, strings, lists of strings, NumPy arrays of numbers).
    tensors : dict
        Name -> :class:`TensorInfo`.
    """

    def __init__(self, path):
        self.path = Path(path)
        size = self.path.stat().st_size
        if size < 24:
            raise GGUFError(f"{self.path} has {size} bytes; a GGUF file starts with a 24-byte header")
        self._map = np.memmap(self.path, dtype=np.uint8, mode="r")
        if bytes(self._map[:4]) != b"GGUF":
            raise GGUFError(f"{self.path} is not a GGUF file (it does not start with b'GGUF')")
        cur = _Cursor(self._map, self.path)
        cur.pos = 4
        self.version = cur.scalar("<I")
        if self.version not in (2, 3):
            raise GGUFError(f"{self.path}: GGUF version {self.version} is not supported (only 2 and 3)")
        n_tensors = cur.count("<Q", "tensors", 24)  # a record: name length, dims count, type, offset
        n_kv = cur.count("<Q", "metadata entries", 12)  # key length, value type
        self.metadata = {}
        for _ in range(n_kv):
            key = cur.string()
            if key in self.metadata:
                raise GGUFError(f"{self.path}: the metadata key {key!r} appears twice")
            self.metadata[key] = cur.value(cur.scalar("<I"))
        records = [self._record(cur) for _ in range(n_tensors)]
        align = _alignment(self.metadata, self.path)
        data_start = -(-cur.pos // align) * align  # round up to a multiple of the alignment
        self.tensors = {}
        for name, shape, kind, offset in records:
            if name in self.tensors:
                raise GGUFError(f"{self.path}: the tensor name {name!r} appears twice")
            if offset % align:
                raise GGUFError(f"{self.path}: tensor {name!r} starts at offset {offset}, "
                                f"not a multiple of the alignment {align}")
            self.tensors[name] = self._info(name, shape, kind, data_start + offset)

    def _record(self, cur):
        """One tensor record: (name, shape in NumPy order, type id, offset in the data section)."""
        name = cur.string()
        n_dims = cur.scalar("<I")
        if not 1 <= n_dims <= _MAX_DIMS:
            raise cur.fail(f"tensor {name!r} has {n_dims} dimensions; GGUF allows 1 to {_MAX_DIMS}")
        dims = [cur.scalar("<Q") for _ in range(n_dims)]
        return name, tuple(reversed(dims)), cur.scalar("<I"), cur.scalar("<Q")

    def _info(self, name, shape, kind, offset):
        if kind not in BLOCKS:
            raise GGUFError(f"{self.path}: tensor {name!r} has type id {kind}; this reader knows "
                            + ", ".join(f"{k} ({v[0]})" for k, v in BLOCKS.items()))
        _, per_block, block_bytes = BLOCKS[kind]
        if shape[-1] % per_block:
            raise GGUFError(f"{self.path}: tensor {name!r} has rows of {shape[-1]} numbers, "
                            f"not a multiple of the block size {per_block}")
        nbytes = math.prod(shape) // per_block * block_bytes  # Python ints: no overflow
        if offset + nbytes > len(self._map):
            raise GGUFError(f"{self.path}: tensor {name!r} ({nbytes} bytes from byte {offset}) runs past "
                            f"the end of the file ({len(self._map)} bytes)")
        return TensorInfo(name, shape, kind, offset, nbytes)

    def _tensor(self, name) -> TensorInfo:
        if not isinstance(name, str) or name not in self.tensors:
            raise ValueError(f"{self.path} has no tensor named {name!r}")
        return self.tensors[name]

    def raw(self, name) -> np.ndarray:
        """The stored bytes of a tensor, one row of blocks per row: shape (rows, bytes per row)."""
        info = self._tensor(name)
        data = self._map[info.offset:info.offset + info.nbytes]
        return np.asarray(data).reshape(math.prod(info.shape[:-1]), info.row_bytes)

    def array(self, name, rows=None) -> np.ndarray:
        """A tensor as float32 (dequantised), optionally only the given rows.

        Parameters
        ----------
        name : str
        rows : array_like of int, optional
            Row indices (for example token ids of an embedding table), shape (n,).
        """
        info = self._tensor(name)
        raw = self.raw(name)
        if rows is None:
            return dequantize(raw, info.type_id).reshape(info.shape)
        rows = as_index_array(rows, "rows", len(raw), allow_empty=True)
        check_ndim(rows, "rows", 1, "(n,)", exact=True)
        return dequantize(raw[rows], info.type_id)


def dequantize(raw, type_id) -> np.ndarray:
    r"""Turn stored blocks back into float32 numbers: (rows, bytes per row) -> (rows, numbers per row).

    Block layouts (32 numbers per block; ``d`` and ``m`` are float16):

    * ``Q8_0``: ``d``, then 32 signed bytes ``q``; :math:`x = d\,q`.
    * ``Q4_0``: ``d``, then 16 bytes of two 4-bit ``q`` each; :math:`x = d\,(q - 8)`.
    * ``Q4_1``: ``d``, ``m``, then 16 bytes of 4-bit ``q``; :math:`x = d\,q + m`.

    In a 4-bit block, byte ``j`` holds number ``j`` in its low half and
    number ``j + 16`` in its high half.

    Examples
    --------
    >>> block = np.frombuffer(np.array([0.5, 1.0], "<f2").tobytes() + bytes([0x21] * 16), np.uint8)
    >>> dequantize(block[None], 3)[0, [0, 16]]    # q = 1 and q = 2: 0.5*q + 1
    array([1.5, 2. ], dtype=float32)
    """
    if isinstance(type_id, bool) or type_id not in BLOCKS:
        raise ValueError(f"type_id must be one of {sorted(BLOCKS)}, got {type_id!r}")
    name, per_block, block_bytes = BLOCKS[type_id]
    raw = np.asarray(raw)
    if raw.dtype != np.uint8 or raw.ndim != 2 or raw.shape[1] % block_bytes:
        raise ValueError(f"raw must be uint8 bytes of shape (rows, n * {block_bytes}) for {name}, got dtype "
                         f"{raw.dtype} and shape {raw.shape}")
    raw = np.ascontiguousarray(raw)  # a no-op for rows of the memory map
    rows, n_blocks = raw.shape[0], raw.shape[1] // block_bytes
    if name in ("F32", "F16"):
        return raw.view("<f4" if name == "F32" else "<f2").astype(np.float32, copy=False)
    blocks = raw.reshape(rows, n_blocks, block_bytes)  # (rows, n_blocks, block_bytes)
    d = blocks[..., 0:2].copy().view("<f2").astype(np.float32)  # (rows, n_blocks, 1)
    if name == "Q8_0":
        q = blocks[..., 2:].view(np.int8).astype(np.float32)
        q *= d
        return q.reshape(rows, n_blocks * 32)
    start = 4 if name == "Q4_1" else 2
    packed = blocks[..., start:]  # (rows, n_blocks, 16)
    q = np.empty((rows, n_blocks, 2, 16), dtype=np.float32)
    np.bitwise_and(packed, 0x0F, out=q[..., 0, :], casting="unsafe")  # numbers 0..15 of each block
    np.right_shift(packed, 4, out=q[..., 1, :], casting="unsafe")  # numbers 16..31
    q = q.reshape(rows, n_blocks, 32)
    if name == "Q4_0":
        q -= 8
        q *= d
    else:
        m = blocks[..., 2:4].copy().view("<f2").astype(np.float32)
        q *= d
        q += m
    return q.reshape(rows, n_blocks * 32)


def read_gguf(path) -> GGUFFile:
    """Open a GGUF file: read its metadata and map its tensors (no weights are read yet)."""
    return GGUFFile(check_path(path, file=True))
