"""Each layer of a run brought to the head: a whole branch, or an overlay on its base."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from freshmark.adapters.git.repo import GitRepo
from freshmark.core.chunking import CHUNKING_VERSION
from freshmark.core.config import Config, Layer, rules_fingerprint
from freshmark.core.errors import PermanentError
from freshmark.core.manifest import Manifest
from freshmark.core.overlay import OverlayBase, base_commit_of, plan_overlay
from freshmark.core.ports import BranchView, ChunkCounts
from freshmark.core.tree import FileChange, changed_paths, with_moves
from freshmark.services.indexing.batches import FanOut
from freshmark.services.indexing.run import IndexRun


def chunking_stamp(config: Config) -> str:
    """The rules a layer is chunked under: ``CHUNKING_VERSION``, and the digest of the
    config's classification rules when they are not the defaults."""
    fingerprint = rules_fingerprint(config.rules)
    return f"{CHUNKING_VERSION}+{fingerprint}" if fingerprint else CHUNKING_VERSION


def index_whole(
    run: IndexRun, index: BranchView, layers: Sequence[Layer], target: str | None,
    fan_out: FanOut | None = None,
) -> tuple[bool, list[Layer]]:
    """Each layer from its indexed commit to the head, split over worker processes when
    ``fan_out`` wants the run. Returns (anything diffed, layers done)."""
    repo, head, summary = run.repo, run.head, run.summary
    diffs: dict[str | None, list[FileChange]] = {}
    done: list[Layer] = []
    work: list[tuple[Layer, list[FileChange]]] = []
    full_passes: list[Layer] = []
    for layer_ in layers:
        old = index.manifest.layer_commit(layer_.name)
        if target and is_stale_target(repo, old, head):
            continue  # never move a stamp backwards
        done.append(layer_)
        # Chunked or classified under other rules (a new version, a config's [classify]):
        # every file of the layer once more, unchanged or not.
        rechunk = old is not None and index.manifest.layer_chunking(layer_.name) != \
            chunking_stamp(run.config)
        if old == head and not rechunk:
            continue
        # An indexed commit lost to a force push (and gc) means a full rescan of the layer.
        lost = old is not None and not has_commit(repo, old)
        since = None if lost or rechunk else old
        if since not in diffs:
            diffs[since] = repo.diff(since, head)
            if since is None:  # gitlinks never show in a diff; count them on a full pass
                for submodule_path in repo.submodules(head):
                    summary.skip("submodule", submodule_path)
        changes = diffs[since]
        if rechunk and not lost and old != head:  # the full pass misses what went since
            changes = with_moves(changes, repo.diff(old, head))
        work.append((layer_, changes))
        if lost or rechunk:  # a full pass: what no diff names (an earlier run's) goes too
            full_passes.append(layer_)
    if fan_out is not None and fan_out.wants(sum(len(run.changes_in(*w)) for w in work)):
        run.index_split(work, fan_out)
    else:
        for layer_, changes in work:
            run.index_layer(layer_, changes)
    for layer_ in full_passes:  # after every batch: the vanished paths' chunks are all written
        run.tombstone_vanished(layer_)
    return bool(diffs), done


def index_overlay(
    run: IndexRun, index: BranchView, below: BranchView, layers: Sequence[Layer],
    target: str | None,
) -> tuple[bool, list[Layer]]:
    """Each layer of an overlay (``index``, layered on ``below``) brought to
    ``diff(base's indexed commit, head)`` (``plan_overlay``): the cost is the files that
    differ from the base, whatever the base did meanwhile."""
    repo, head, config = run.repo, run.head, run.config
    base = OverlayBase.of(index.manifest)
    assert base is not None
    base_manifest = below.manifest
    layered_on = dict(base.layered_on)
    to_base: dict[str, list[FileChange]] = {}
    since_head: dict[str | None, set[str] | None] = {}
    done: list[Layer] = []
    changed = False
    for layer_ in layers:
        old = index.manifest.layer_commit(layer_.name)
        if target and is_stale_target(repo, old, head):
            continue
        done.append(layer_)
        base_commit = base_commit_of(base_manifest, layer_.name)
        if base_commit is None or not has_commit(repo, base_commit):
            raise PermanentError(f"base {base.branch!r} of {run.ref.name}@{run.branch} is at a "
                                 "commit this repository lacks; fetch it or index the branch alone")
        if old == head and not base.moved(layer_.name, base_manifest):
            continue
        changed = True
        if base_commit not in to_base:
            to_base[base_commit] = repo.diff(base_commit, head)
        known = old is not None and has_commit(repo, old)
        if old not in since_head:
            since_head[old] = changed_paths(repo.diff(old, head)) if known else None
        held = {p for p in index.held_paths() if config.layer_for(p) == layer_}
        differing = changed_paths(to_base[base_commit])
        present = {p for p in held - differing if repo.blob_at(head, p) is not None}
        plan = plan_overlay(to_base[base_commit], held, since_head[old], present)
        run.index_layer(layer_, plan.changes)
        if plan.purge_paths:
            run.summary.chunks_purged += index.purge_paths(plan.purge_paths)
            run.purged = True
        layered_on[layer_.name] = base_commit
    forked_from = repo.merge_base(base_manifest.commit or head, head)
    run.overlay_stamp = OverlayBase(base.repo_key, base.branch, below.name, layered_on,
                                    forked_from).to_dict()
    return changed, done


def has_commit(repo: GitRepo, sha: str) -> bool:
    try:
        repo.commit_time(sha)
    except PermanentError:
        return False
    return True


def advance_manifest(run: IndexRun, done: Sequence[Layer], changed: bool) -> Manifest:
    """Stamp the layers ``done`` at the run's head, last (the manifest is the stamp of record);
    the generation moves only if the run wrote anything.

    Runs of other layers of the branch may stamp meanwhile (the caller holds the branch's
    stamp lock around this, so each merges into the manifest as it is now): their layers'
    stamps and overlay bases are kept as they are."""
    index, head, when = run.index, run.head, run.when
    manifest = index.reload_manifest()
    if run.overlay_stamp is not None:
        manifest.overlay = _merged_overlay(manifest, run.overlay_stamp, done)
    generation = manifest.generation
    if changed:
        generation = run.generation
        if manifest.generation >= generation:
            # Another layer's run published this generation while this one wrote records at it:
            # a follower caught up to it would never fetch them, so the next generation is
            # published with a rewind to this run's (followers fetch from there again).
            manifest.rewind(manifest.generation + 1, generation)
            generation = manifest.generation + 1
    if run.purged:
        manifest.purged_generation = generation
    for layer in done:
        manifest.layers[layer.name] = {"commit": head, "indexed_at": when,
                                       "chunking": chunking_stamp(run.config)}
    if all(manifest.layer_commit(layer.name) == head for layer in run.config.layers):
        manifest.commit, manifest.indexed_at = head, when
    manifest.generation = max(manifest.generation, generation)
    manifest.last_used_at = when
    index.save_manifest(manifest)
    return manifest


def _merged_overlay(manifest: Manifest, stamp: dict[str, Any], done: Sequence[Layer]
                    ) -> dict[str, Any]:
    """The run's overlay stamp, with the bases of layers it did not run as the manifest has
    them now (another layer's run may have moved its own)."""
    current = OverlayBase.of(manifest)
    layered_on = dict(current.layered_on) if current is not None else {}
    ran = {layer.name for layer in done}
    layered_on.update({name: commit for name, commit in stamp["layered_on"].items()
                       if name in ran or name not in layered_on})
    return {**stamp, "layered_on": layered_on}


def record_counts(index: BranchView, counts: ChunkCounts) -> None:
    """The chunks the branch shows, kept in its manifest for ``status`` (which then lists no
    ids). A second, small write after ``advance_manifest`` (under the same stamp lock, into the
    manifest as it is now): they are counted by the lexical index, which catches up to the
    generation that manifest published. Unchanged counts (a no-op run) are not written again."""
    manifest = index.reload_manifest()
    wanted = {"live": counts.live, "tombstoned": counts.tombstoned}
    if manifest.chunk_counts != wanted:
        manifest.chunk_counts = wanted
        index.save_manifest(manifest)


def is_stale_target(repo: GitRepo, indexed: str | None, head: str) -> bool:
    """True when the index already holds a descendant of ``head`` (an old job finishing late)."""
    return bool(
        indexed
        and indexed != head
        and has_commit(repo, indexed)
        and repo.is_ancestor(head, indexed)
    )
