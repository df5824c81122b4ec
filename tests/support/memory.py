"""What a structure keeps: the bytes still allocated once a feed has run and its garbage is collected."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable


def kept_by(feed: Callable[[], object]) -> int:
    """Bytes still allocated once `feed` has run and its garbage is collected: what it left in the structures
    it fed."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        feed()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
