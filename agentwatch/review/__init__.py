"""The review service: the review queue in the browser, its store, and the labels it publishes.

Needs the `review` extra (`pip install "agentwatch[review]"`); importing it without raises an ImportError that
names the missing package.
"""

from __future__ import annotations

import importlib.util

from agentwatch.service_extra import require

require(__name__)

INSTALL = 'pip install "agentwatch[review]"'

# Import name -> distribution of every package the `review` extra adds to `service` (pyproject.toml).
REVIEW_MODULES = {
    "starlette": "starlette",
    "uvicorn": "uvicorn",
    "jinja2": "jinja2",
    "markupsafe": "markupsafe",
    "multipart": "python-multipart",
    "itsdangerous": "itsdangerous",
    "sqlalchemy": "sqlalchemy",
    "psycopg": "psycopg",
}

for _module, _distribution in REVIEW_MODULES.items():
    if importlib.util.find_spec(_module) is None:
        raise ImportError(
            f"{__name__} needs {_distribution}, which is not installed: {INSTALL}", name=_module
        )
