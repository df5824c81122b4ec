"""What the tests and the benchmarks share: brokers' helpers, fakes, score factories, independent references.

Imported as `tests.support.<module>` from the repository root (pytest's `pythonpath`, `python -m benchmarks.x`),
never through `sys.path` edits.
"""
