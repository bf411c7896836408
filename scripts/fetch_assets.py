#!/usr/bin/env python3
"""Fetch, verify and trim the JavaScript the built book serves from its own site.

The book must make no request off the site: MathJax, RequireJS and the ipywidgets HTML manager
are served from ``_assets/`` (copied into ``_build/html/_static/`` through ``html_static_path``
in ``_config.yml``). This script downloads pinned versions with ``npm pack`` (the npm registry
is the only place they come from), checks each tarball against the pinned SRI integrity, and
unpacks only the files the site loads at run time:

* ``mathjax/``: ``tex-mml-chtml.js``, the CHTML web fonts it requests per glyph, the TeX
  extensions ``autoload`` fetches on first use (``\\boldsymbol``, ``\\cancel``, ...), and the
  accessibility components (plus English speech rules) that its context menu can load.
* ``requirejs/require.js``.
* ``thebe/``: thebe 0.9 for "Live Code" (``_ext/mha_live.py``): ``index.js``, the chunks it loads
  from its own folder (``NNNN.index.js``), ``thebe.css`` and the bundles' license notes. Its widget
  manager is @jupyter-widgets/jupyterlab-manager 5 (ipywidgets 8). Source maps are left out.
* ``html-manager/``: ``embed-amd.js`` (one bundle, no chunks), the Font Awesome woff2 fonts its
  CSS asks for, and ``offline-setup.js`` (not from npm: a copy of ``_ext/offline-setup.js``),
  which configures RequireJS so the fonts resolve to this folder (otherwise to the page's
  folder: 404).

It is idempotent: when ``_assets/.manifest.json`` already records the pinned versions and every
file is present with its recorded sha256, it does nothing but print the total size (~0.3 s).
Stdlib only.

Usage: ``python scripts/fetch_assets.py [--force]``   (--force: re-extract even when up to date)

The tarball cache is ``$MHA_ASSETS_CACHE`` or ``~/.cache/mha-book-assets``.
"""
from __future__ import annotations

import argparse
import base64
import fnmatch
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "_assets"
MANIFEST = ASSETS / ".manifest.json"  # a dotfile: Sphinx does not copy it into the site
CACHE = Path(os.environ.get("MHA_ASSETS_CACHE", Path.home() / ".cache" / "mha-book-assets"))
SCHEMA = 1

# Not from npm: the manager's settings for a site with no CDN, a file of this repository that is
# copied next to the manager. Loaded (see _config.yml) after require.js and before embed-amd.js,
# from _static/html-manager/: it finds the fonts' folder from its own URL. It is not kept in
# _ext/static/, which the build copies into _static/ as it is (a second, misplaced copy).
OFFLINE_SETUP_JS = ROOT / "_ext" / "offline-setup.js"

# name, version, SRI integrity of the registry tarball, destination folder under _assets/,
# (pattern inside the tarball -> path under the destination) rules, first match wins, and
# "local" files of this repository copied in (destination path -> source).
# Patterns are fnmatch globs ("*" also crosses "/"); a rule's destination ending in "/"
# keeps the part of the path that follows the pattern's fixed prefix.
PACKAGES = [
    {
        "name": "mathjax",
        "version": "3.2.2",
        "integrity": "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==",
        "dest": "mathjax",
        "local": {},
        "exclude": ["package/es5/input/tex/extensions/all-packages.js"],
        "keep": [
            ("package/LICENSE", "LICENSE"),
            ("package/es5/tex-mml-chtml.js", "tex-mml-chtml.js"),
            ("package/es5/output/chtml/fonts/woff-v2/*.woff", "output/chtml/fonts/woff-v2/"),
            ("package/es5/input/tex/extensions/*.js", "input/tex/extensions/"),
            # the context menu's accessibility options (explorer, speech) load these
            ("package/es5/a11y/*.js", "a11y/"),
            ("package/es5/sre/mathmaps/base.json", "sre/mathmaps/base.json"),
            ("package/es5/sre/mathmaps/en.json", "sre/mathmaps/en.json"),
        ],
    },
    {
        "name": "requirejs",
        "version": "2.3.8",
        "integrity": "sha512-7/cTSLOdYkNBNJcDMWf+luFvMriVm7eYxp4BcFCsAX0wF421Vyce5SXP17c+Jd5otXKGNehIonFlyQXSowL6Mw==",
        "dest": "requirejs",
        "local": {},
        "exclude": [],
        "keep": [("package/require.js", "require.js")],
    },
    {
        # The 1.x line is the manager for ipywidgets 8 (ipywidgets 8.1.9 asks for ^1.0.1).
        "name": "@jupyter-widgets/html-manager",
        "version": "1.0.15",
        "integrity": "sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//SABeNz1yp47bCrJ3CQA==",
        "dest": "html-manager",
        "local": {"offline-setup.js": OFFLINE_SETUP_JS},
        "exclude": [],
        "keep": [
            ("package/dist/embed-amd.js", "embed-amd.js"),
            ("package/dist/embed.js.LICENSE.txt", "THIRD-PARTY-LICENSES.txt"),
            # Font Awesome 5 (solid, regular, brands). @font-face lists eot, woff2, woff, ttf,
            # svg; every current browser takes woff2, so the other formats are left out.
            ("package/dist/*.woff2", "./"),
        ],
    },
    {
        # The same fonts where the bundle's CSS sometimes asks for them: its webpack public path
        # can resolve to the AMD module's folder (_static/@jupyter-widgets/html-manager/dist/)
        # before offline-setup.js has mapped that folder. Two copies cost ~300 kB; a 404 costs
        # the icons and a console error.
        "id": "@jupyter-widgets/html-manager (fonts at the module path)",
        "name": "@jupyter-widgets/html-manager",
        "version": "1.0.15",
        "integrity": "sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//SABeNz1yp47bCrJ3CQA==",
        "dest": "@jupyter-widgets/html-manager/dist",
        "local": {},
        "exclude": [],
        "keep": [("package/dist/*.woff2", "./")],
    },
    {
        # Live Code (_ext/mha_live.py). 0.9.x bundles @jupyter-widgets/jupyterlab-manager 5.0.13,
        # base 6 and controls 5: the ipywidgets 8 front end (0.8.x had ipywidgets 7's).
        "name": "thebe",
        "version": "0.9.3",
        "integrity": "sha512-Rb/7kVhtlffXra3kIe7OuIGE7awsm2/fGWxw21DiNfnWLnUQiDl9AWqYdshPwZPG/5DzLpsJRPix2xtCPtJmQQ==",
        "dest": "thebe",
        "local": {},
        "exclude": ["package/lib/*.map"],
        "keep": [
            ("package/lib/index.js", "index.js"),
            ("package/lib/*.index.js", "./"),
            ("package/lib/thebe.css", "thebe.css"),
            ("package/lib/*.LICENSE.txt", "./"),
        ],
    },
]


def human(n: int) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"


def sri(path: Path, algo: str = "sha512") -> str:
    h = hashlib.new(algo)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return f"{algo}-" + base64.b64encode(h.digest()).decode()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tarball_name(pkg: dict) -> str:
    # npm pack's file naming: "@scope/name" -> "scope-name-<version>.tgz"
    return pkg["name"].lstrip("@").replace("/", "-") + f"-{pkg['version']}.tgz"


def fetch_tarball(pkg: dict) -> Path:
    """Return the cached tarball for pkg, downloading it with `npm pack` when needed."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / tarball_name(pkg)
    if path.exists() and sri(path) == pkg["integrity"]:
        return path
    if path.exists():
        print(f"  cached {path.name} does not match the pinned integrity; fetching again")
        path.unlink()
    spec = f"{pkg['name']}@{pkg['version']}"
    print(f"  npm pack {spec}")
    if shutil.which("npm") is None:
        sys.exit("fetch_assets: npm is needed to fetch the assets (apt-get install npm)")
    proc = subprocess.run(
        ["npm", "pack", spec, "--json", "--pack-destination", str(CACHE)],
        capture_output=True, text=True, cwd=CACHE,
    )
    if proc.returncode != 0:
        sys.exit(f"fetch_assets: npm pack {spec} failed:\n{proc.stderr.strip()}")
    info = json.loads(proc.stdout)[0]
    # npm checks the download against the registry's integrity; we check both against the pin.
    if info.get("integrity") != pkg["integrity"]:
        sys.exit(f"fetch_assets: {spec}: npm reports integrity {info.get('integrity')}, "
                 f"pinned {pkg['integrity']}")
    got = CACHE / info["filename"]
    if got != path:
        got.replace(path)
    actual = sri(path)
    if actual != pkg["integrity"]:
        path.unlink()
        sys.exit(f"fetch_assets: {spec}: tarball integrity {actual} != pinned {pkg['integrity']}")
    return path


def target_for(member: str, pkg: dict) -> str | None:
    if any(fnmatch.fnmatchcase(member, pat) for pat in pkg["exclude"]):
        return None
    for pattern, dest in pkg["keep"]:
        if fnmatch.fnmatchcase(member, pattern):
            if dest.endswith("/"):
                prefix = pattern[: pattern.index("*")] if "*" in pattern else pattern
                prefix = prefix[: prefix.rindex("/") + 1]
                rel = member[len(prefix):]
                return rel if dest == "./" else dest + rel
            return dest
    return None


def extract(pkg: dict, tarball: Path, dest: Path) -> dict[str, dict]:
    """Unpack the kept files of tarball under dest; return {relative path: {size, sha256}}."""
    files: dict[str, dict] = {}
    with tarfile.open(tarball, "r:gz") as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            rel = target_for(member.name, pkg)
            if rel is None:
                continue
            out = (dest / rel).resolve()
            if dest.resolve() not in out.parents:
                sys.exit(f"fetch_assets: refusing to write outside {dest}: {member.name}")
            data = tar.extractfile(member).read()
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(data)
            files[rel] = {"size": len(data), "sha256": sha256_bytes(data)}
    for rel, source in pkg["local"].items():
        data = source.read_bytes()
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_bytes(data)
        files[rel] = {"size": len(data), "sha256": sha256_bytes(data), "local": True}
    # every rule must have matched something, or the pin moved under us
    for pattern, _ in pkg["keep"]:
        with tarfile.open(tarball, "r:gz") as tar:
            if not any(fnmatch.fnmatchcase(n, pattern) for n in tar.getnames()):
                sys.exit(f"fetch_assets: {pkg['name']}: nothing matched {pattern!r}")
    return files


def load_manifest() -> dict | None:
    try:
        return json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        return None


def up_to_date(manifest: dict | None) -> bool:
    if not manifest or manifest.get("schema") != SCHEMA:
        return False
    recorded = {p.get("id", p["name"]): p for p in manifest.get("packages", [])}
    for pkg in PACKAGES:
        rec = recorded.get(pkg.get("id", pkg["name"]))
        if not rec or rec["version"] != pkg["version"] or rec["integrity"] != pkg["integrity"]:
            return False
        if rec.get("keep") != [list(k) for k in pkg["keep"]] or rec.get("exclude") != pkg["exclude"]:
            return False
        for rel, source in pkg["local"].items():
            meta = rec["files"].get(rel)
            if not meta or meta["sha256"] != sha256_bytes(source.read_bytes()):
                return False
        for rel, meta in rec["files"].items():
            path = ASSETS / pkg["dest"] / rel
            if not path.is_file() or path.stat().st_size != meta["size"]:
                return False
            if sha256_bytes(path.read_bytes()) != meta["sha256"]:
                print(f"  {path.relative_to(ROOT)} differs from the manifest")
                return False
    return True


def total_size(manifest: dict) -> tuple[int, int, dict[str, int]]:
    per = {p.get("id", p["name"]): sum(f["size"] for f in p["files"].values()) for p in manifest["packages"]}
    count = sum(len(p["files"]) for p in manifest["packages"])
    return sum(per.values()), count, per


def report(manifest: dict, status: str) -> None:
    total, count, per = total_size(manifest)
    for p in manifest["packages"]:
        key = p.get("id", p["name"])
        print(f"  {key}@{p['version']}: {len(p['files'])} files, {human(per[key])}")
    print(f"fetch_assets: {status}: {count} files, {human(total)} ({total} bytes) in "
          f"{ASSETS.relative_to(ROOT)}/")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--force", action="store_true", help="re-extract even when up to date")
    args = ap.parse_args(argv)

    manifest = load_manifest()
    if not args.force and up_to_date(manifest):
        report(manifest, "up to date")
        return 0

    ASSETS.mkdir(exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=ASSETS))
    try:
        new = {"schema": SCHEMA, "packages": []}
        for pkg in PACKAGES:
            tarball = fetch_tarball(pkg)
            files = extract(pkg, tarball, staging / pkg["dest"])
            new["packages"].append({
                "id": pkg.get("id", pkg["name"]), "name": pkg["name"], "version": pkg["version"], "integrity": pkg["integrity"],
                "dest": pkg["dest"], "keep": [list(k) for k in pkg["keep"]],
                "exclude": pkg["exclude"], "files": dict(sorted(files.items())),
            })
        # swap the freshly extracted folders in, then write the manifest last
        MANIFEST.unlink(missing_ok=True)
        for pkg in PACKAGES:
            final = ASSETS / pkg["dest"]
            final.parent.mkdir(parents=True, exist_ok=True)
            if final.exists():
                shutil.rmtree(final)
            (staging / pkg["dest"]).replace(final)
        MANIFEST.write_text(json.dumps(new, indent=1) + "\n")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    report(new, "unpacked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
