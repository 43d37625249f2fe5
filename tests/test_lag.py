"""An index behind its head, in words: only what there is is named."""

from __future__ import annotations

from freshmark.core.lag import lag_phrase


def test_the_phrase_names_commits_new_paths_and_what_is_verified_as_it_is_now():
    assert lag_phrase({"commits": 3, "new_files": 1, "new_paths": ["src/logger.ts"],
                       "changed_files": 2, "deleted_files": 1}) == (
        "not indexed yet: 3 commits; 1 new file not searched (src/logger.ts); "
        "2 changed and 1 deleted files verified as they are now")


def test_the_phrase_leaves_out_what_did_not_happen():
    assert lag_phrase({"commits": 1, "new_files": 0, "new_paths": [], "changed_files": 1,
                       "deleted_files": 0}) == (
        "not indexed yet: 1 commit; 1 changed file verified as it is now")


def test_more_new_files_than_named_say_so():
    paths = [f"src/f{n}.go" for n in range(5)]
    phrase = lag_phrase({"commits": 1, "new_files": 7, "new_paths": paths, "changed_files": 0,
                         "deleted_files": 0})
    assert phrase.endswith("7 new files not searched (src/f0.go, src/f1.go, src/f2.go, "
                           "src/f3.go, src/f4.go, ...)")


def test_moved_files_are_named_apart_from_new_and_deleted_ones():
    phrase = lag_phrase({"commits": 1, "new_files": 0, "new_paths": [], "changed_files": 0,
                         "deleted_files": 0, "moved_files": 2})
    assert phrase == "not indexed yet: 1 commit; 2 moved files verified at their new paths"
