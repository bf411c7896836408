"""Read a ``.safetensors`` file with NumPy alone.

The format is simple. The file starts with 8 bytes: a little-endian unsigned
integer ``N``. The next ``N`` bytes are a JSON object that maps each tensor's
name to its ``dtype``, ``shape`` and ``data_offsets`` ``[begin, end]``. The raw
little-endian bytes of all tensors follow; offsets count from the end of the
JSON. So we map the file into memory once and give each tensor a view of its
bytes: nothing is copied, and pages are read from disk only when used.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

__all__ = ["SafetensorsError", "DTYPES", "MAX_HEADER_BYTES", "read_header", "load_safetensors"]

#: safetensors dtype name -> NumPy dtype (all little-endian). BF16 is handled separately.
DTYPES = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"), "I8": np.dtype("i1"),
    "U64": np.dtype("<u8"), "U32": np.dtype("<u4"), "U16": np.dtype("<u2"), "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
_ITEMSIZE = {**{name: dt.itemsize for name, dt in DTYPES.items()}, "BF16": 2}
#: The longest header accepted, as in the reference reader (100 MB): a larger one is a damaged file.
MAX_HEADER_BYTES = 100_000_000


class SafetensorsError(ValueError):
    """The file is not a valid safetensors file (the message says what is wrong)."""


def _unique_keys(pairs):
    """``object_pairs_hook`` for :func:`json.loads` that refuses a key given twice."""
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} appears twice")
        out[key] = value
    return out


def read_header(path):
    """Read and check the JSON header of a safetensors file.

    Every tensor must fit in the data section, and together the tensors must
    cover it exactly, without gaps or overlaps (as the format requires).

    Returns
    -------
    header : dict
        ``name -> {"dtype", "shape", "data_offsets"}``, without ``"__metadata__"``.
    metadata : dict
        The optional ``"__metadata__"`` entry (string to string), or ``{}``.
    data_start : int
        Byte position where the tensor data begins (``8 + N``).
    """
    path = Path(path)
    size = path.stat().st_size
    with open(path, "rb") as f:
        first = f.read(8)
        if len(first) < 8:
            raise SafetensorsError(f"{path} has {size} bytes; a safetensors file starts with an 8-byte header length")
        n = int.from_bytes(first, "little")
        if n > size - 8:
            raise SafetensorsError(f"{path}: the header length says {n} bytes, but only {size - 8} bytes follow")
        if n > MAX_HEADER_BYTES:
            raise SafetensorsError(f"{path}: the header length says {n} bytes, more than the "
                                   f"{MAX_HEADER_BYTES} a safetensors header may have")
        raw = f.read(n)
    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=_unique_keys)
    except (UnicodeDecodeError, ValueError, RecursionError) as err:  # JSONDecodeError is a ValueError
        raise SafetensorsError(f"{path}: the header is not valid UTF-8 JSON ({err})") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: the header must be a JSON object, got {type(header).__name__}")
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise SafetensorsError(f"{path}: __metadata__ must be a JSON object of strings, got {metadata!r:.80}")
    data_size = size - 8 - n
    for name, entry in header.items():
        _check_entry(path, name, entry, data_size)
    _check_coverage(path, header, data_size)
    return header, metadata, 8 + n


def _check_entry(path, name, entry, data_size):
    """Raise unless ``entry`` describes a tensor that fits in the data section."""
    where = f"{path}: tensor {name!r}"
    if not isinstance(entry, dict) or not {"dtype", "shape", "data_offsets"} <= entry.keys():
        raise SafetensorsError(f"{where} needs 'dtype', 'shape' and 'data_offsets', got {entry!r:.80}")
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if not isinstance(dtype, str) or dtype not in _ITEMSIZE:
        raise SafetensorsError(f"{where} has dtype {dtype!r:.40}; supported: {', '.join(sorted(_ITEMSIZE))}")
    if not isinstance(shape, list) or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                                              for s in shape):
        raise SafetensorsError(f"{where} has shape {shape!r:.80}; expected a list of non-negative integers")
    if (not isinstance(offsets, list) or len(offsets) != 2
            or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)):
        raise SafetensorsError(f"{where} has data_offsets {offsets!r:.80}; expected [begin, end]")
    begin, end = offsets
    if not 0 <= begin <= end <= data_size:
        raise SafetensorsError(
            f"{where} has data_offsets [{begin}, {end}], outside the data section of {data_size} bytes"
        )
    expected = math.prod(shape) * _ITEMSIZE[dtype]
    if end - begin != expected:
        raise SafetensorsError(
            f"{where} has {end - begin} bytes, but dtype {dtype} and shape {shape} need {expected}"
        )


def _check_coverage(path, header, data_size):
    """Raise unless the tensors' byte ranges tile the data section: no gap, no overlap."""
    at = 0
    for name, entry in sorted(header.items(), key=lambda item: tuple(item[1]["data_offsets"])):
        begin, end = entry["data_offsets"]
        if begin != at:
            problem = "overlaps the tensor before it" if begin < at else f"leaves a gap of {begin - at} bytes"
            raise SafetensorsError(f"{path}: tensor {name!r} starts at byte {begin} of the data and {problem}")
        at = end
    if at != data_size:
        raise SafetensorsError(f"{path}: the tensors cover {at} bytes, but the data section has {data_size}")


def load_safetensors(path) -> dict:
    """Map every tensor of a safetensors file to a read-only NumPy array.

    Arrays are views of one memory map of the file (no copy), except
    ``BF16`` tensors, which NumPy cannot hold and which are widened to
    float32 (a bfloat16 number is the top half of a float32).

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    dict
        Tensor name -> ndarray, in the order of the header.

    Raises
    ------
    SafetensorsError
        If the file is truncated or its header is malformed.

    Examples
    --------
    >>> import json, os, tempfile
    >>> data = np.arange(6, dtype="<f4").tobytes()
    >>> head = json.dumps({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}).encode()
    >>> with tempfile.NamedTemporaryFile(suffix=".safetensors", delete=False) as f:
    ...     _ = f.write(len(head).to_bytes(8, "little") + head + data)
    >>> load_safetensors(f.name)["w"]
    array([[0., 1., 2.],
           [3., 4., 5.]], dtype=float32)
    >>> os.remove(f.name)
    """
    header, _, start = read_header(path)
    if not header:
        return {}
    buffer = np.memmap(path, dtype=np.uint8, mode="r")
    tensors = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        raw = buffer[start + begin:start + end]
        if entry["dtype"] == "BF16":
            wide = raw.view("<u2").astype(np.uint32) << 16  # bfloat16 bits -> top half of float32
            tensors[name] = wide.view(np.float32).reshape(entry["shape"])
        else:
            tensors[name] = np.asarray(raw.view(DTYPES[entry["dtype"]]).reshape(entry["shape"]))
    return tensors
