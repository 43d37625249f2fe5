"""Rewinds: a generation published with records written at an older one (two layers' runs of a
branch overlapped) sends a follower caught up in between back to fetch from there."""

from __future__ import annotations

from freshmark.core.manifest import MAX_REWINDS, Manifest


def _manifest(generation: int) -> Manifest:
    return Manifest(repo="shop", repo_key="path:/shop", branch="main", embedder="hashing",
                    collection="c", generation=generation)


def test_a_follower_caught_up_between_the_two_publications_fetches_from_the_written_one(
) -> None:
    manifest = _manifest(generation=6)
    manifest.rewind(published=6, written=5)  # 5 was published by the other layer's run first
    assert manifest.rewound_held(5) == 4


def test_a_follower_behind_the_written_generation_keeps_what_it_holds() -> None:
    manifest = _manifest(generation=6)
    manifest.rewind(published=6, written=5)
    assert manifest.rewound_held(3) == 3


def test_a_follower_caught_up_to_the_rewound_publication_is_not_sent_back() -> None:
    manifest = _manifest(generation=7)
    manifest.rewind(published=6, written=5)
    assert manifest.rewound_held(6) == 6


def test_the_oldest_written_generation_a_follower_missed_wins() -> None:
    manifest = _manifest(generation=9)
    manifest.rewind(published=7, written=5)
    manifest.rewind(published=9, written=6)
    assert manifest.rewound_held(6) == 4


def test_a_follower_older_than_the_rewinds_kept_rebuilds() -> None:
    manifest = _manifest(generation=10 + 2 * MAX_REWINDS)
    for n in range(MAX_REWINDS + 1):
        manifest.rewind(published=10 + 2 * n + 2, written=10 + 2 * n + 1)
    assert len(manifest.rewinds) == MAX_REWINDS
    assert manifest.rewound_held(11) == -1


def test_rewinds_survive_the_manifests_json() -> None:
    manifest = _manifest(generation=6)
    manifest.rewind(published=6, written=5)
    assert Manifest.from_json(manifest.to_json()).rewinds == [[6, 5]]
