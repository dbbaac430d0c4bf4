"""Human reports: one builder writes the same content as Markdown and as HTML.

Examples:
    >>> import tempfile
    >>> report = Report("Demo")
    >>> report.paragraph("Accuracy is **high**.")
    >>> report.table(["model", "acc"], [["a", 0.9]])
    >>> paths = report.write(tempfile.mkdtemp())
    >>> sorted(p.name for p in paths)
    ['report.html', 'report.md']
"""

from __future__ import annotations

import html
import math
import re
from pathlib import Path
from typing import Callable, List, Optional, Sequence, Tuple, Union
from urllib.parse import quote

__all__ = ["Report", "format_number", "plural_noun", "counted", "md_escape"]

#: ``scheme:`` at the start of a link (``file:``, ``javascript:``, ``https:``): a URL, not a file name
_URL_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
#: control characters and line separators: a name from a file is one line of text
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
#: Markdown's inline punctuation, backslash-escaped wherever user text is shown
_MARKDOWN_SPECIAL = re.compile(r"[\\`*\[\]()#|!~{}$]")
#: an underscore at a word's edge (between letters or digits it is never emphasis: ``ring_road`` stays)
_EDGE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
#: what the HTML renderer reads as literal text, left to right: a backslash escape, a code span, an entity
_LITERAL = re.compile(
    r"\\([!-/:-@\[-`{-~])|(`+)(.+?)(?<!`)\2(?!`)|&(#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});"
)
#: the link targets a report may hold: a file of its folder (relative, no ``..``) or an anchor
_RELATIVE_TARGET = re.compile(r"[A-Za-z0-9._~/%+-]+(#[A-Za-z0-9._~-]*)?|#[A-Za-z0-9._~-]+")
_WEB_TARGET = re.compile(r"https?://[^\s\"'<>\\`]+")

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:2em auto;padding:0
1em; color:#222;line-height:1.5} table{border-collapse:collapse;margin:1em 0;font-size:.95em} th,td{border:1px
solid #ccc;padding:.3em .7em;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left} figure{margin:1.5em 0}figure
img{max-width:100%;border:1px solid #eee} figcaption{color:#555;font-size:.9em}
code,pre{background:#f6f8fa;border-radius:4px}pre{padding:.8em;overflow-x:auto}
caption{caption-side:bottom;color:#555;font-size:.9em;padding-top:.3em}
"""


def format_number(value, digits: int = 3) -> str:
    """Short text for a table cell: ints as is, floats with ``digits`` decimals (very large or small:
    ``digits`` significant digits)."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-3):
            return f"{value:.{digits}g}"
        return f"{value:.{digits}f}"
    return str(value)


def plural_noun(noun: str) -> str:
    """An English plural for the one-word names a report uses (``seed``, ``sensor``, ``county``, ``class``); a
    word already plural (``hours``) stays.

    Examples:
        >>> plural_noun("sensor"), plural_noun("county"), plural_noun("day"), plural_noun("hours")
        ('sensors', 'counties', 'days', 'hours')
        >>> plural_noun("class"), plural_noun("box"), plural_noun("patch")
        ('classes', 'boxes', 'patches')
    """
    if noun.endswith(("ss", "x", "ch", "sh")):
        return noun + "es"
    if noun.endswith("s"):
        return noun
    if noun.endswith("y") and noun[-2:-1] not in tuple("aeiou"):
        return noun[:-1] + "ies"
    return noun + "s"


def counted(count: int, noun: str) -> str:
    """``count`` and ``noun``, plural unless the count is one.

    Examples:
        >>> counted(1, "seed"), counted(3, "seed"), counted(0, "run")
        ('1 seed', '3 seeds', '0 runs')
    """
    return f"{count} {noun if count == 1 else plural_noun(noun)}"


def md_escape(value: object) -> str:
    """Text from a user's file (a node, class, column or file name) as literal Markdown: shown as written
    wherever a report puts it (heading, paragraph, bullet, table cell, caption), never read as markup.

    Control characters become spaces; ``&``, ``<`` and ``>`` become entities (so no tag or comment reaches
    the file); Markdown's punctuation is backslash-escaped, so ``[text](target)`` cannot become a link nor
    ``![alt](src)`` an image; an underscore between letters or digits stays as it is.

    Examples:
        >>> md_escape("[click](javascript:alert(1))")
        '\\\\[click\\\\]\\\\(javascript:alert\\\\(1\\\\)\\\\)'
        >>> md_escape("<script>"), md_escape("ring_road"), md_escape("a|b")
        ('&lt;script&gt;', 'ring_road', 'a\\\\|b')
    """
    text = _CONTROL.sub(" ", str(value)).strip()
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MARKDOWN_SPECIAL.sub(lambda match: "\\" + match.group(0), text)
    text = _EDGE_UNDERSCORE.sub(r"\\_", text)
    text = re.sub(r"^([-+=])", r"\\\1", text)  # a list marker or a setext underline at a line's start
    return re.sub(r"^(\d+)([.)])", r"\1\\\2", text)  # an ordered list's marker


def _link_target(target: str) -> Optional[str]:
    """The ``href`` of a report's own link: an anchor, a file of the report's folder, or a web page; else
    ``None`` (``javascript:``, ``file:``, ``../``, an absolute path)."""
    if _WEB_TARGET.fullmatch(target):
        return target
    if _RELATIVE_TARGET.fullmatch(target) and not target.startswith("/") and ".." not in target.split("/"):
        return target
    return None


def _inline_html(text: str) -> str:
    """One line of the report's Markdown as HTML: backslash escapes, code spans and entities are literal text;
    ``**bold**`` and ``*emphasis*`` are kept; ``[text](target)`` is a link only to the report's own targets
    (:func:`_link_target`), and never an image."""
    literals: List[str] = []

    def keep(markup: str) -> str:
        literals.append(markup)
        return f"\x00{len(literals) - 1}\x00"

    def literal(match: re.Match) -> str:
        if match.group(1) is not None:
            return keep(html.escape(match.group(1)))
        if match.group(2) is not None:
            body = match.group(3)
            if body.startswith(" ") and body.endswith(" ") and body.strip(" "):
                body = body[1:-1]
            return keep("<code>" + html.escape(body) + "</code>")
        decoded = html.unescape(match.group(0))
        return keep(html.escape(decoded)) if decoded != match.group(0) else match.group(0)

    escaped = html.escape(_LITERAL.sub(literal, text.replace("\x00", "\ufffd")))
    escaped = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", escaped)
    escaped = re.sub(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])", r"<em>\1</em>", escaped)

    def link(match: re.Match) -> str:
        label, target = match.group(1), html.unescape(match.group(2))
        href = None if "\x00" in target else _link_target(target)  # escaped text is no project target
        return f'<a href="{html.escape(href)}">{label}</a>' if href else match.group(0)

    escaped = re.sub(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)", link, escaped)
    return re.sub("\x00(\\d+)\x00", lambda match: literals[int(match.group(1))], escaped)


def _plain_text(text: str) -> str:
    """The report's Markdown of one line as plain text (the HTML ``<title>``, an image's ``alt``)."""
    return html.unescape(re.sub(r"<[^>]*>", "", _inline_html(text)))


class Report:
    """Accumulate headings, paragraphs, tables, figures and code; write ``report.md`` + ``report.html``.

    Blocks are kept in the order they are added; :meth:`markdown` and :meth:`html` render the
    same content (HTML escaped; ``**bold**``, backtick code and ``[text](link)`` markup kept), and
    :meth:`write` writes both files atomically. Numbers in table cells are formatted with
    :func:`format_number`; figures are PNG files referenced by name from the report's folder.

    Args:
        title: the report's title (the ``#`` heading and the HTML ``<title>``).

    Examples:
        >>> report = Report("Demo")
        >>> report.heading("Results")
        >>> report.table(["model", "accuracy"], [["a", "0.9"]])
        >>> print(report.markdown())
        # Demo
        <BLANKLINE>
        ## Results
        <BLANKLINE>
        | model | accuracy |
        |---|---:|
        | a | 0.9 |
        <BLANKLINE>
    """

    def __init__(self, title: str):
        self.title = title
        self._blocks: List[Tuple[str, tuple]] = []

    def heading(self, text: str, level: int = 2) -> None:
        self._blocks.append(("heading", (text, max(2, min(level, 6)))))

    def paragraph(self, text: Union[str, Callable[[], str]]) -> None:
        """A paragraph; a callable is a text known only when the report is written (a run's wall time), read
        once by :meth:`write` for both files."""
        self._blocks.append(("paragraph", (text,)))

    def bullets(self, items: Sequence[str]) -> None:
        self._blocks.append(("bullets", (list(items),)))

    def table(
        self,
        headers: Sequence[str],
        rows: Sequence[Sequence],
        caption: Optional[str] = None,
        align: Optional[str] = None,
    ) -> None:
        """A table; ``align`` gives each column's alignment, ``"l"`` or ``"r"`` (default: the first column
        left, the others right, as numbers read best)."""
        align = align or "l" + "r" * (len(headers) - 1)
        if len(align) != len(headers) or set(align) - {"l", "r"}:
            raise ValueError(f"align needs one 'l' or 'r' per column ({len(headers)}), got {align!r}")
        cells = [[c if isinstance(c, str) else format_number(c) for c in row] for row in rows]
        self._blocks.append(("table", (list(headers), cells, caption, align)))

    def figure(self, filename: str, caption: str) -> None:
        """Reference a PNG that lives in the report's directory (a file name, not a URL; checked against the
        folder by :meth:`write`)."""
        if not isinstance(filename, str) or not filename:
            raise TypeError(f"a figure is the name of a file in the report's folder, got {filename!r}")
        if _URL_SCHEME.match(filename) or filename.startswith(("/", "\\")):
            raise ValueError(
                f"figure {filename!r} is not a file name relative to the report's folder; save the "
                "figure into the run folder and give its name"
            )
        self._blocks.append(("figure", (filename, caption)))

    def code(self, text: str) -> None:
        self._blocks.append(("code", (text,)))

    def _written(self) -> List[Tuple[str, tuple]]:
        """The blocks, each deferred text read now."""
        return [
            (kind, (args[0](),) if kind == "paragraph" and callable(args[0]) else args)
            for kind, args in self._blocks
        ]

    def markdown(self, _blocks: Optional[List[Tuple[str, tuple]]] = None) -> str:
        lines = [f"# {self.title}", ""]
        for kind, args in self._written() if _blocks is None else _blocks:
            if kind == "heading":
                lines += ["#" * args[1] + " " + args[0], ""]
            elif kind == "paragraph":
                lines += [args[0], ""]
            elif kind == "bullets":
                lines += [f"- {item}" for item in args[0]] + [""]
            elif kind == "table":
                headers, rows, caption, align = args
                lines.append("| " + " | ".join(headers) + " |")
                lines.append("|" + "|".join("---:" if side == "r" else "---" for side in align) + "|")
                lines += ["| " + " | ".join(row) + " |" for row in rows]
                lines += ([""] + [f"*{caption}*"] if caption else []) + [""]
            elif kind == "figure":
                lines += [f"![{args[1]}]({quote(args[0])})", "", f"*{args[1]}*", ""]
            elif kind == "code":
                fence = "`" * max(3, 1 + max((len(run) for run in re.findall("`+", args[0])), default=0))
                lines += [fence, args[0].rstrip("\n"), fence, ""]
        return "\n".join(lines)

    def html(self, _blocks: Optional[List[Tuple[str, tuple]]] = None) -> str:
        parts = [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>{html.escape(_plain_text(self.title))}</title><style>{_CSS}</style></head><body>",
            f"<h1>{_inline_html(self.title)}</h1>",
        ]
        for kind, args in self._written() if _blocks is None else _blocks:
            if kind == "heading":
                parts.append(f"<h{args[1]}>{_inline_html(args[0])}</h{args[1]}>")
            elif kind == "paragraph":
                parts.append(f"<p>{_inline_html(args[0])}</p>")
            elif kind == "bullets":
                parts.append("<ul>" + "".join(f"<li>{_inline_html(i)}</li>" for i in args[0]) + "</ul>")
            elif kind == "table":
                headers, rows, caption, align = args
                side = [
                    "" if (i == 0) == (a == "l") else f' style="text-align:{"left" if a == "l" else "right"}"'
                    for i, a in enumerate(align)
                ]
                head = "".join(f"<th{side[i]}>{_inline_html(h)}</th>" for i, h in enumerate(headers))
                body = "".join(
                    "<tr>"
                    + "".join(f"<td{side[i]}>{_inline_html(c)}</td>" for i, c in enumerate(row))
                    + "</tr>"
                    for row in rows
                )
                cap = f"<caption>{_inline_html(caption)}</caption>" if caption else ""
                parts.append(f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
            elif kind == "figure":
                source, alt = html.escape(quote(args[0])), html.escape(_plain_text(args[1]))
                parts.append(
                    f'<figure><img src="{source}" alt="{alt}">'
                    f"<figcaption>{_inline_html(args[1])}</figcaption></figure>"
                )
            elif kind == "code":
                parts.append(f"<pre><code>{html.escape(args[0])}</code></pre>")
        parts.append("</body></html>")
        return "\n".join(parts)

    def write(self, target) -> List[Path]:
        """Write ``report.md`` and ``report.html`` (atomically) into a folder or a :class:`RunDirectory`."""
        from .rundir import RunDirectory

        directory = target if isinstance(target, RunDirectory) else RunDirectory(target)
        for kind, args in self._blocks:
            if kind == "figure":
                directory.file(
                    args[0]
                )  # a figure that leads outside the folder is refused before anything is written
        blocks = self._written()
        return [
            directory.write_text("report.md", self.markdown(blocks)),
            directory.write_text("report.html", self.html(blocks)),
        ]
