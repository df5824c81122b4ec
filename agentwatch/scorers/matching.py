"""Maximum bipartite matching: pair expected items with distinct actual items (calls, list elements)."""

from __future__ import annotations

from collections.abc import Callable, Sequence


def match_pairs(
    left: Sequence[int],
    right: int,
    fits: Callable[[int, int], bool],
    candidates: Callable[[int], Sequence[int]] | None = None,
) -> dict[int, int]:
    """A maximum matching {left item: right item} where `fits(l, r)`, each right item used once.

    Left items are tried in the order given and a left item once matched stays matched while later ones are
    added (augmenting paths), so the items listed first — e.g. the required calls before the optional ones —
    get the largest matching they can have on their own. `candidates(l)`: the right items that may fit `l`, in
    ascending order (default: all of them), so that a caller who can index them is not asked about the rest.
    """
    owner: dict[int, int] = {}  # right item -> left item
    fit_cache: dict[tuple[int, int], bool] = {}

    def fit(l_item: int, r_item: int) -> bool:
        key = (l_item, r_item)
        hit = fit_cache.get(key)
        if hit is None:
            hit = fit_cache[key] = fits(l_item, r_item)
        return hit

    def augment(l_item: int, seen: set[int]) -> bool:
        for r_item in candidates(l_item) if candidates is not None else range(right):
            if r_item in seen or not fit(l_item, r_item):
                continue
            seen.add(r_item)
            if r_item not in owner or augment(owner[r_item], seen):
                owner[r_item] = l_item
                return True
        return False

    for l_item in left:
        augment(l_item, set())
    return {l_item: r_item for r_item, l_item in owner.items()}
