"""report.html: the run's report.md as one self-contained page.

The markdown is rendered with markdown-it (CommonMark with tables); every image the report links
(`![...](name.png)`, a file beside report.md) is embedded as a base64 data URI, so the page opens
alone, mailed or archived, with every plot shown. A linked image that is missing is refused.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from markdown_it import MarkdownIt

from testbed.errors import TestbedError

STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;line-height:1.45}
table{border-collapse:collapse;margin:1em 0;font-size:.9em}th,td{border:1px solid #bbb;padding:.25em .5em}
th{background:#eee}img{max-width:100%;display:block;margin:1em 0}code{background:#f4f4f4}"""

_IMG = re.compile(r'<img src="([^"]+)"')


def page_title(report_md: Path) -> str:
    """The report's first top-level heading (the scenario's name) and its run directory's name."""
    heading = next((line[2:].strip() for line in report_md.read_text().splitlines() if line.startswith("# ")), "")
    return f"{heading}: {report_md.parent.name}" if heading else report_md.parent.name


def write_html(report_md: Path) -> Path:
    """report.html beside `report_md`, its plots embedded; returns its path."""
    report_md = Path(report_md)
    if not report_md.is_file():
        raise TestbedError(f"{report_md}: no report to render (write it first: testbed report RUN)")
    body = MarkdownIt("commonmark").enable("table").render(report_md.read_text())

    def embed(match: re.Match) -> str:
        name = html.unescape(match.group(1))
        path = report_md.parent / name
        if "/" in name or not path.is_file():
            raise TestbedError(f"{report_md}: the plot {name} it shows is not beside it")
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        return f'<img src="data:image/png;base64,{data}"'

    body = _IMG.sub(embed, body)
    title = html.escape(page_title(report_md))
    page = (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>"
            f"<style>{STYLE}</style></head><body>\n{body}</body></html>\n")
    out = report_md.with_suffix(".html")
    out.write_text(page, encoding="utf-8")
    return out
