"""Docs coverage: every public symbol of taxdl must be rendered (`::: path`) on some page.

Family pages render their own primitives; the API reference page (`api.md`) renders
whatever no other page does, so the check below fails only if that generation breaks.
Run `python docs/docs_coverage.py` to list what each page covers and what is missing.
"""

import importlib
import inspect
import pathlib
import re
import sys

MODULES = (
    "taxdl", "taxdl.groups", "taxdl.taxonomy", "taxdl.nn", "taxdl.nn.functional",
    "taxdl.optim", "taxdl.testing", "taxdl.testing.strategies", "taxdl.diagnostics",
    "taxdl.data", "taxdl.plot",
)
_DIRECTIVE = re.compile(r"^:::\s+(\S+)", re.MULTILINE)


def _module(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def public_names(module) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    out = []
    for n in names:
        obj = getattr(module, n, None)
        if obj is None or inspect.ismodule(obj):
            continue
        owner = getattr(obj, "__module__", None)
        if owner is not None and not str(owner).startswith("taxdl") and (
                inspect.isclass(obj) or inspect.isfunction(obj)):
            continue  # re-exported from another library
        out.append(n)
    return sorted(out)


def _public_objects():
    """(module name, public name, object) for every public name of every importable
    module in MODULES."""
    for name in MODULES:
        module = _module(name)
        if module is None:
            continue
        for n in public_names(module):
            yield name, n, getattr(module, n)


def public_paths() -> dict:
    """Every public path (and canonical path of classes and functions) → object."""
    paths = {}
    for name, n, obj in _public_objects():
        paths[f"{name}.{n}"] = obj
        if inspect.isclass(obj) or inspect.isfunction(obj):
            paths.setdefault(f"{obj.__module__}.{obj.__qualname__}", obj)
    return paths


def resolve(path: str):
    """The object at a dotted path, or None."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        module = _module(".".join(parts[:i]))
        if module is None:
            continue
        obj = module
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def rendered(docs_dir, skip: str = "api.md") -> dict:
    """Directive paths found on the pages (except `skip`) → object."""
    out = {}
    for page in sorted(pathlib.Path(docs_dir).rglob("*.md")):
        if page.name == skip:
            continue
        for path in _DIRECTIVE.findall(page.read_text(encoding="utf-8")):
            out[path] = resolve(path)
    return out


def missing(docs_dir) -> dict[str, list[str]]:
    """Per module, the public names whose object no page renders."""
    done = {id(o) for o in rendered(docs_dir).values() if o is not None}
    out, seen = {}, set()
    for name, n, obj in _public_objects():
        if id(obj) in done or id(obj) in seen:
            continue
        seen.add(id(obj))
        out.setdefault(name, []).append(n)
    return out


def _is_constant(obj) -> bool:
    return not (inspect.isclass(obj) or inspect.isroutine(obj) or callable(obj))


def api_page(docs_dir) -> str:
    """`:::` directives for everything the other pages do not render, by module
    (constants as a table of their values)."""
    parts = []
    for module, names in missing(docs_dir).items():
        mod = _module(module)
        parts.append(f"## `{module}`\n")
        consts = [n for n in names if _is_constant(getattr(mod, n))]
        if consts:
            parts.append("| constant | value |\n|---|---|")
            for n in consts:
                value = repr(getattr(mod, n)).replace("|", "\\|").replace("\n", " ")
                if len(value) > 120:
                    value = value[:117] + "..."
                parts.append(f"| `{module}.{n}` | `{value}` |")
            parts.append("")
        for n in names:
            if n in consts:
                continue
            obj = getattr(mod, n)
            qual = getattr(obj, "__qualname__", n)
            if "<locals>" in qual:  # made at run time: invisible to static analysis
                doc = inspect.getdoc(obj) or ""
                parts.append(f"### `{module}.{n}`\n\n`{n}{inspect.signature(obj)}`\n\n"
                             f"{doc}\n")
            else:
                parts.append(f"::: {module}.{n}\n")
    return "\n".join(parts) if parts else "Every public symbol is documented on its page."


if __name__ == "__main__":
    docs = pathlib.Path(__file__).resolve().parent
    sys.path.insert(0, str(docs.parent))
    gaps = missing(docs)
    for module, names in gaps.items():
        print(f"{module}: {', '.join(names)}")
    print(f"{sum(map(len, gaps.values()))} public symbols rendered only by the API page.")
