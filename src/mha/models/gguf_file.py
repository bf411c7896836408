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

__all__ = ["GGUFError", "TensorInfo", "GGUFFile", "read_gguf", "dequantize", "BLOCKS"]

# Metadata value types of the GGUF format.
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9

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


class _Cursor:
    """Reads little-endian values from a buffer, moving forward."""

    def __init__(self, buffer, path):
        self.buf, self.pos, self.path = buffer, 0, path

    def scalar(self, fmt):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.buf):
            raise GGUFError(f"{self.path}: the file ends inside the header (at byte {self.pos})")
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return value

    def string(self):
        n = self.scalar("<Q")
        if self.pos + n > len(self.buf):
            raise GGUFError(f"{self.path}: a string of {n} bytes runs past the end of the file")
        raw = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return raw.decode("utf-8", errors="replace")

    def value(self, kind):
        if kind in _SCALARS:
            return self.scalar(_SCALARS[kind])
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            item, n = self.scalar("<I"), self.scalar("<Q")
            if item in _SCALARS and item != 7:  # numbers: read them all at once
                dtype = np.dtype(_SCALARS[item])
                end = self.pos + n * dtype.itemsize
                if end > len(self.buf):
                    raise GGUFError(f"{self.path}: an array of {n} numbers runs past the end of the file")
                out = np.frombuffer(self.buf, dtype=dtype, count=n, offset=self.pos).copy()
                self.pos = end
                return out
            return [self.value(item) for _ in range(n)]
        raise GGUFError(f"{self.path}: unknown metadata value type {kind} at byte {self.pos}")


class GGUFFile:
    """An open GGUF file: its metadata and a memory map of its tensors.

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
        self._map = np.memmap(self.path, dtype=np.uint8, mode="r")
        cur = _Cursor(self._map, self.path)
        if len(self._map) < 24 or bytes(self._map[:4]) != b"GGUF":
            raise GGUFError(f"{self.path} is not a GGUF file (it does not start with b'GGUF')")
        cur.pos = 4
        self.version = cur.scalar("<I")
        if self.version not in (2, 3):
            raise GGUFError(f"{self.path}: GGUF version {self.version} is not supported (only 2 and 3)")
        n_tensors, n_kv = cur.scalar("<Q"), cur.scalar("<Q")
        self.metadata = {}
        for _ in range(n_kv):
            key = cur.string()
            self.metadata[key] = cur.value(cur.scalar("<I"))
        records = []
        for _ in range(n_tensors):
            name = cur.string()
            dims = [cur.scalar("<Q") for _ in range(cur.scalar("<I"))]
            records.append((name, tuple(reversed(dims)), cur.scalar("<I"), cur.scalar("<Q")))
        align = int(self.metadata.get("general.alignment", 32))
        data_start = -(-cur.pos // align) * align  # round up to a multiple of the alignment
        self.tensors = {name: self._info(name, shape, kind, data_start + offset)
                        for name, shape, kind, offset in records}

    def _info(self, name, shape, kind, offset):
        if kind not in BLOCKS:
            raise GGUFError(f"{self.path}: tensor {name!r} has type id {kind}; this reader knows "
                            + ", ".join(f"{k} ({v[0]})" for k, v in BLOCKS.items()))
        _, per_block, block_bytes = BLOCKS[kind]
        count = math.prod(shape)
        if shape and shape[-1] % per_block:
            raise GGUFError(f"{self.path}: tensor {name!r} has rows of {shape[-1]} numbers, "
                            f"not a multiple of the block size {per_block}")
        nbytes = count // per_block * block_bytes
        if offset + nbytes > len(self._map):
            raise GGUFError(f"{self.path}: tensor {name!r} runs past the end of the file")
        return TensorInfo(name, shape, kind, offset, nbytes)

    def raw(self, name) -> np.ndarray:
        """The stored bytes of a tensor, one row of blocks per row: shape (rows, bytes per row)."""
        info = self.tensors[name]
        data = self._map[info.offset:info.offset + info.nbytes]
        rows = math.prod(info.shape[:-1]) if len(info.shape) > 1 else 1
        return np.asarray(data).reshape(rows, -1)

    def array(self, name, rows=None) -> np.ndarray:
        """A tensor as float32 (dequantised), optionally only the given rows.

        Parameters
        ----------
        name : str
        rows : array_like of int, optional
            Row indices (for example token ids of an embedding table).
        """
        info = self.tensors[name]
        raw = self.raw(name)
        if rows is not None:
            raw = raw[np.asarray(rows)]
        out = dequantize(raw, info.type_id)
        return out.reshape(info.shape) if rows is None else out


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
    raw = np.asarray(raw, dtype=np.uint8)
    name, per_block, block_bytes = BLOCKS[type_id]
    rows = raw.shape[0]
    if name == "F32":
        return raw.view("<f4").astype(np.float32, copy=False).reshape(rows, -1)
    if name == "F16":
        return raw.view("<f2").astype(np.float32).reshape(rows, -1)
    blocks = raw.reshape(rows, -1, block_bytes)  # (rows, n_blocks, block_bytes)
    d = blocks[..., 0:2].copy().view("<f2").astype(np.float32)  # (rows, n_blocks, 1)
    if name == "Q8_0":
        q = blocks[..., 2:].view(np.int8).astype(np.float32)
        q *= d
        return q.reshape(rows, -1)
    start = 4 if name == "Q4_1" else 2
    packed = blocks[..., start:]  # (rows, n_blocks, 16)
    q = np.empty((rows, blocks.shape[1], 2, 16), dtype=np.float32)
    np.bitwise_and(packed, 0x0F, out=q[..., 0, :], casting="unsafe")  # numbers 0..15 of each block
    np.right_shift(packed, 4, out=q[..., 1, :], casting="unsafe")  # numbers 16..31
    q = q.reshape(rows, -1, 32)
    if name == "Q4_0":
        q -= 8
        q *= d
    else:
        m = blocks[..., 2:4].copy().view("<f2").astype(np.float32)
        q *= d
        q += m
    return q.reshape(rows, -1)


def read_gguf(path) -> GGUFFile:
    """Open a GGUF file: read its metadata and map its tensors (no weights are read yet)."""
    return GGUFFile(path)
