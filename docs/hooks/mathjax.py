"""MathJax, shipped with the API site: the formulas render offline, nothing is loaded from a CDN.

``pymdownx.arithmatex`` (generic mode) leaves every formula of the guides and the docstrings as
``\\(...\\)`` or ``\\[...\\]`` in an ``arithmatex`` element; ``javascripts/mathjax.js`` configures MathJax
to typeset exactly those, and ``javascripts/vendor/mathjax/tex-svg-full.js`` is MathJax itself: one file
with the TeX input, every TeX extension and the SVG output with its fonts, so it loads nothing else.

That file is not kept in git (2.2 MB). ``mkdocs build`` runs :func:`on_config` first, which makes sure
it is there and is MathJax 3.2.2's: if not, the pinned package is fetched from the npm registry
(``$npm_config_registry``, else registry.npmjs.org), checked against npm's integrity hash and the two
files are unpacked (the script and MathJax's licence). A build that cannot get it fails, saying so,
instead of writing a site whose formulas do not render. ``python docs/hooks/mathjax.py`` only fetches.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import urllib.request
from pathlib import Path

VERSION = "3.2.2"
#: npm's ``dist.integrity`` of mathjax-3.2.2.tgz (``npm view mathjax@3.2.2 dist.integrity``)
TARBALL_SHA512 = "Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw=="
#: the files taken from the package, where they go under javascripts/vendor/mathjax, and their SHA-256
FILES = {
    "package/es5/tex-svg-full.js": (
        "tex-svg-full.js",
        "a4354ff94fd868aea0cc6eaaa79a57fda0588646fc46ee3700a349ee0a11cbe6",
    ),
    "package/LICENSE": ("LICENSE", "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"),
}
TARGET = Path("javascripts") / "vendor" / "mathjax"


def _sha256(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def _registry() -> str:
    for name in ("npm_config_registry", "NPM_CONFIG_REGISTRY"):
        if os.environ.get(name):
            return os.environ[name].rstrip("/")
    return "https://registry.npmjs.org"


def ensure(docs_dir: str | Path, timeout: float = 120.0) -> Path:
    """Make ``docs_dir/javascripts/vendor/mathjax`` hold MathJax's files; fetch them if any is absent or
    differs. Returns the folder; raises ``RuntimeError`` (saying what failed) when they cannot be had."""
    folder = Path(docs_dir) / TARGET
    if all(_sha256(folder / name) == digest for name, digest in FILES.values()):
        return folder
    url = f"{_registry()}/mathjax/-/mathjax-{VERSION}.tgz"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            tarball = response.read()
    except OSError as error:
        raise RuntimeError(
            f"MathJax {VERSION} is not in {folder} and could not be fetched from {url} ({error}); "
            "without it no formula of the site renders"
        ) from error
    integrity = base64.b64encode(hashlib.sha512(tarball).digest()).decode()
    if integrity != TARBALL_SHA512:
        raise RuntimeError(f"{url} is not MathJax {VERSION}: sha512-{integrity} != sha512-{TARBALL_SHA512}")
    folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
        for member, (name, digest) in FILES.items():
            data = archive.extractfile(member).read()
            if hashlib.sha256(data).hexdigest() != digest:
                raise RuntimeError(f"{member} of {url} differs from MathJax {VERSION}'s")
            partial = folder / f".{name}.{os.getpid()}"
            partial.write_bytes(data)
            os.replace(partial, folder / name)  # whole or not at all, also beside a concurrent build
    return folder


def on_config(config):
    """mkdocs hook: the build stops, saying why, when MathJax cannot be put beside the pages."""
    from mkdocs.exceptions import PluginError

    try:
        ensure(config["docs_dir"])
    except RuntimeError as error:
        raise PluginError(str(error)) from error
    return config


if __name__ == "__main__":
    print(ensure(Path(__file__).resolve().parents[1]))
