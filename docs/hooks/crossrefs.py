"""Cross-references of the docstrings as links: ``:class:`DiffusionOperator``` becomes a link to its entry.

The docstrings name objects with the roles of Sphinx (``:class:``, ``:func:``, ``:meth:``, ``:mod:``,
``:data:``, ``:attr:``, ``:exc:``, ``:obj:``), which help() shows well and Markdown does not know: rendered as
they are, the site would print ``:class:`` before the name. After the build (:func:`on_post_build`) every
page's roles are replaced by a link to the object's entry (the ``id`` mkdocstrings gives it: its dotted
path), resolved the way Sphinx does: relative to the object whose entry the text belongs to, then up its
parents, then by the name's end anywhere in the API (``~`` shows the last component only). A name with no
entry (an object of another library) stays as code, without the role.

``tests/test_docs_site.py`` fails on any role left in the built site.
"""

from __future__ import annotations

import bisect
import html
import re
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROLE = re.compile(
    r":(?:class|func|meth|mod|data|attr|exc|obj|py:\w+):"
    r"<code>(~?)([\w.]+)(\(\))?(?: &lt;~?([\w.]+)&gt;)?</code>"
)
ANCHOR = re.compile(r'id="(pdenets(?:\.\w+)*)"')


def _index(site: Path) -> Dict[str, str]:
    """Every documented object's dotted path → the page URL (relative to the site root) that holds it."""
    found: Dict[str, str] = {}
    for page in sorted(site.rglob("*.html")):
        relative = page.relative_to(site).as_posix()
        for name in ANCHOR.findall(page.read_text(encoding="utf-8")):
            found.setdefault(name, relative)
    return found


def _resolve(
    name: str, context: Optional[str], index: Dict[str, str], by_end: Dict[str, List[str]]
) -> Optional[str]:
    """The dotted path of the entry ``name`` means where the text of ``context`` uses it."""
    name = name.lstrip(".")
    if name in index:
        return name
    scope = context
    while scope:
        candidate = f"{scope}.{name}"
        if candidate in index:
            return candidate
        scope = scope.rpartition(".")[0]
    candidates = by_end.get(name.rsplit(".", 1)[-1], [])
    matching = [path for path in candidates if path == name or path.endswith("." + name)]
    if not matching and "." in name:  # a re-exported path: pdenets.operators.X is pdenets.operators.module.X
        head, _, tail = name.rpartition(".")
        matching = [
            path for path in candidates if path.endswith("." + tail) and path.startswith(head.split(".")[0])
        ]
        prefix = [path for path in matching if path.startswith(head + ".")]
        matching = prefix or matching
    if not matching:
        return None

    # the closest to the context: the longest common prefix, then the shortest path
    def closeness(path: str) -> Tuple[int, int]:
        shared = 0
        for a, b in zip((context or "").split("."), path.split(".")):
            if a != b:
                break
            shared += 1
        return (-shared, len(path))

    return min(matching, key=closeness)


def _link(target: str, page: str, index: Dict[str, str]) -> str:
    holder = index[target]
    depth = page.count("/")
    prefix = "../" * depth
    return f"{prefix}{holder.removesuffix('index.html')}#{target}" if holder != page else f"#{target}"


def rewrite(
    text: str, page: str, index: Dict[str, str], by_end: Dict[str, List[str]]
) -> Tuple[str, int, int]:
    """``text`` (one page's HTML) with its roles replaced; the counts of links made and names left as code."""
    anchors = [(match.start(), match.group(1)) for match in ANCHOR.finditer(text)]
    positions = [position for position, _ in anchors]
    linked = unresolved = 0
    out: List[str] = []
    last = 0
    for match in ROLE.finditer(text):
        out.append(text[last : match.start()])
        last = match.end()
        tilde, name, call, explicit = match.group(1), match.group(2), match.group(3) or "", match.group(4)
        before = bisect.bisect_right(positions, match.start()) - 1
        context = anchors[before][1] if before >= 0 else None
        shown = (name.rsplit(".", 1)[-1] if tilde and not explicit else name) + call
        target = _resolve(explicit or name, context, index, by_end)
        if target is None:
            unresolved += 1
            out.append(f"<code>{html.escape(shown, quote=False)}</code>")
        else:
            linked += 1
            out.append(f'<a class="autorefs" href="{_link(target, page, index)}"><code>{shown}</code></a>')
    out.append(text[last:])
    return "".join(out), linked, unresolved


def on_post_build(config, **kwargs) -> None:
    site = Path(config["site_dir"])
    index = _index(site)
    by_end: Dict[str, List[str]] = {}
    for path in index:
        by_end.setdefault(path.rsplit(".", 1)[-1], []).append(path)
    for page in sorted(site.rglob("*.html")):
        relative = page.relative_to(site).as_posix()
        text = page.read_text(encoding="utf-8")
        if ":<code>" not in text:
            continue
        new, _, _ = rewrite(text, relative, index, by_end)
        if new != text:
            page.write_text(new, encoding="utf-8")
