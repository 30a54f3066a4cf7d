"""index.html: the figures with their tables, readable offline in any browser.

One static page: the style is inline, the images are the files beside it, and
there is no script, so it opens from a file, an archive or a CI artifact alike.
"""
from __future__ import annotations

import html

import pandas as pd

from acltuner.report.figures import Figure

_STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1400px; color: #222; }
table { border-collapse: collapse; font-size: 13px; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 2px 8px; text-align: right; }
th { background: #f0f0f0; }
td:first-child, th:first-child { text-align: left; }
img { max-width: 100%; height: auto; display: block; margin: 0.5em 0; }
.note { color: #666; font-style: italic; }
.facts td { text-align: left; }
"""


def table(frame: pd.DataFrame, floats: str = "{:.4g}") -> str:
    return frame.to_html(index=False, escape=True, na_rep="-", border=0,
                         float_format=floats.format)


def section(figure: Figure | None, title: str, body: str = "", note: str = "") -> str:
    """A figure (or a note saying why there is none) with the HTML that explains it."""
    parts = [f"<h2>{html.escape(figure.title if figure else title)}</h2>"]
    if figure is not None:
        parts.append(f'<img src="{html.escape(figure.file)}" width="{figure.width}" '
                     f'height="{figure.height}" alt="{html.escape(figure.title)}">')
    if note:
        parts.append(f'<p class="note">{html.escape(note)}</p>')
    parts.append(body)
    return "\n".join(parts)


def facts(rows: list[tuple[str, str]]) -> str:
    cells = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                    for k, v in rows)
    return f'<table class="facts">{cells}</table>'


def page(title: str, header: str, sections: list[str]) -> str:
    return "\n".join(["<!DOCTYPE html>", '<html lang="en">', "<head>",
                      '<meta charset="utf-8">', f"<title>{html.escape(title)}</title>",
                      f"<style>{_STYLE}</style>", "</head>", "<body>",
                      f"<h1>{html.escape(title)}</h1>", header, *sections, "</body>",
                      "</html>", ""])
