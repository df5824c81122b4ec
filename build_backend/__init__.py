"""The in-tree PEP 517 build backend (pyproject.toml `backend-path`): see agentwatch_build.py."""
