"""MkDocs hooks for the taxdl site (no network at build time).

- `on_config`: drop navigation entries whose page does not exist (yet).
- `on_page_markdown`: fill the generated pages: `<!-- catalogue -->` with the catalogue
  table from `taxdl.table()`, `<!-- api -->` with `:::` directives for every public symbol
  not rendered on another page (see `docs_coverage.py`).
- `on_env`: make every public path of a rendered object (`taxdl.Table`,
  `taxdl.taxonomy.Table`, …) resolve as a cross-reference to where it is rendered.
"""

import os
import pathlib
import re
import sys

DOCS = pathlib.Path(__file__).resolve().parent


def _ensure_path() -> None:
    # the repository root (for `taxdl`) and docs/ (for `docs_coverage`), first on the path
    for path in (str(DOCS), str(DOCS.parent)):
        if path in sys.path:
            sys.path.remove(path)
        sys.path.insert(0, path)


_ensure_path()
import docs_coverage as coverage  # noqa: E402  (docs/docs_coverage.py)


def _exists(entry, docs_dir: str) -> bool:
    return os.path.exists(os.path.join(docs_dir, entry))


def _filter_nav(nav, docs_dir: str):
    out = []
    for item in nav:
        if isinstance(item, str):
            if _exists(item, docs_dir):
                out.append(item)
        elif isinstance(item, dict):
            (title, value), = item.items()
            if isinstance(value, list):
                kept = _filter_nav(value, docs_dir)
                if kept:
                    out.append({title: kept})
            elif "://" in value or _exists(value, docs_dir):
                out.append(item)
    return out


def on_config(config, **kwargs):
    if config.get("nav"):
        config["nav"] = _filter_nav(config["nav"], config["docs_dir"])
    return config


def _catalogue() -> str:
    _ensure_path()
    import taxdl
    from taxdl.taxonomy import FAMILIES

    parts = [
        f"{len(taxdl.table())} primitives. Columns: C/P/A = closure / probabilistic / "
        "algebraic; L/R/E = left / right / equivariant. Probabilistic cells that are not "
        "initialisation-like carry their kind (`[data]`, `[time]`).\n"]
    for family in FAMILIES:
        table = taxdl.table(family=family)
        if len(table):
            heading = {"loss": "Losses"}.get(family, f"{family.capitalize()}s")
            parts.append(f"## {heading}\n\n{table.to_markdown()}\n")
            notes = [(r.name, r.reference, r.taxonomy.note) for r in table.rows
                     if r.reference or r.taxonomy.note]
            if notes:
                parts.append("\n".join(
                    f"- **{name}**" + (f" — {ref}" if ref else "") + (f". {note}" if note
                                                                        else "")
                    for name, ref, note in notes) + "\n")
    return "\n".join(parts)


_LINK = re.compile(r"\[([^\]]+)\]\(([\w./-]+\.md)(#[\w-]*)?\)")


def _drop_missing_links(markdown: str, page, docs_dir: str) -> str:
    """Links to pages that do not exist (yet) become plain text."""
    base = os.path.dirname(page.file.src_path)

    def fix(match):
        target = os.path.normpath(os.path.join(base, match.group(2)))
        return match.group(0) if _exists(target, docs_dir) else match.group(1)

    return _LINK.sub(fix, markdown)


def on_page_markdown(markdown, page, config, files, **kwargs):
    markdown = _drop_missing_links(markdown, page, config["docs_dir"])
    if "<!-- catalogue -->" in markdown:
        markdown = markdown.replace("<!-- catalogue -->", _catalogue())
    _ensure_path()
    if "<!-- api -->" in markdown:
        markdown = markdown.replace("<!-- api -->", coverage.api_page(config["docs_dir"]))
    return markdown


def on_env(env, config, files, **kwargs):
    _ensure_path()
    plugin = config["plugins"].get("autorefs")
    if plugin is None:
        return env
    rendered = {}
    for identifier, urls in list(plugin._primary_url_map.items()):
        obj = coverage.resolve(identifier)
        if obj is not None and urls:
            rendered.setdefault(id(obj), urls[0])
    for path, obj in coverage.public_paths().items():
        url = rendered.get(id(obj))
        if url is not None and path not in plugin._primary_url_map:
            plugin.register_url(path, url)
    return env
