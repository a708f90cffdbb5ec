"""MkDocs hooks (mkdocs.yml, ``hooks:``): the README's task table on a page, and Sphinx roles in docstrings as code.

scripts/task_table.py (``make tasks-table``) writes the table between two markers in README.md, with image paths
relative to the repository root (``docs/images/tasks/...``). A page that holds the line ``TABLE_HERE`` gets that
table, its image paths made relative to the page; a missing marker in the README fails the build.

The library's docstrings cross-reference with Sphinx roles (``:class:`~robodojo.x.Y` ``), which mkdocstrings renders
as text: ``:class:<code>~robodojo.x.Y</code>``. The API pages show them as the name alone, ``Y`` with a leading ``~``
(Sphinx's short form), else the whole dotted name.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

# The markers scripts/task_table.py writes (TABLE_START, TABLE_END there).
TABLE_START = "<!-- task table: scripts/task_table.py writes what follows -->"
TABLE_END = "<!-- end of the task table -->"
TABLE_HERE = "<!-- the task table of README.md -->"
SPHINX_ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj):<code>(~?)([^<]+)</code>")


def readme_task_table(readme: Path) -> str:
    """The table between the README's markers, image paths as the README has them (relative to the repository)."""
    text = readme.read_text(encoding="utf-8")
    start, end = text.find(TABLE_START), text.find(TABLE_END)
    if start < 0 or end < start:
        raise ValueError(f"{readme}: the task table markers {TABLE_START!r} and {TABLE_END!r} are missing")
    return text[start + len(TABLE_START) : end].strip()


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if TABLE_HERE not in markdown:
        return markdown
    root = Path(config.config_file_path).parent
    docs = Path(config.docs_dir).resolve().relative_to(root.resolve()).as_posix()  # "docs"
    page_dir = posixpath.dirname(page.file.src_uri)
    prefix = posixpath.relpath(".", page_dir or ".")  # from the page's folder back to docs/
    table = readme_task_table(root / "README.md").replace(f"]({docs}/", "](" + ("" if prefix == "." else prefix + "/"))
    return markdown.replace(TABLE_HERE, table)


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    return SPHINX_ROLE.sub(lambda m: f"<code>{m[2].rsplit('.', 1)[-1] if m[1] else m[2]}</code>", html)
