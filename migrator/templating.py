"""Jinja2 templates (the top-level `templates/` folder, installed as `migrator.templates`).

An installed copy reads them from the package; a source checkout that imports the local `migrator/`
(as `python -m pytest` from the repository root does, whatever is installed) reads them from `templates/`
beside the package, so both the installed tool and the test suite see the same files.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path


@lru_cache(maxsize=None)
def template_text(name: str) -> str:
    try:
        return resources.files("migrator.templates").joinpath(name).read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        checkout = Path(__file__).resolve().parent.parent / "templates" / name
        return checkout.read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def _compiled(name: str):
    from jinja2 import Environment          # imported when a template is rendered: most plans render none
    env = Environment(keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)
    return env.from_string(template_text(name))


def render(template: str, **kw) -> str:
    return _compiled(template).render(**kw)
