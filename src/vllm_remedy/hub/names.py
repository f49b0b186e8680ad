"""What a revision may be before it is sent to the Hub or joined onto a path in the Hugging Face cache.

huggingface_hub checks a repository id (``validate_repo_id``) but not a revision: ``hf_hub_download`` and
``try_to_load_from_cache`` join it onto ``<repo folder>/refs/`` as it is (``_cache_commit_hash_for_specific_revision``,
file_download.py), so ``--revision /some/file`` read from a manifest names a file anywhere on this machine. The Hub
only has git refs — branches, tags, ``refs/pr/<n>``, ``refs/convert/...`` — and commits, so a revision is held to
git's ref-name rules (``git check-ref-format --allow-onelevel``): anything else the Hub has not, and vLLM's download
of it fails.
"""

from __future__ import annotations

#: Characters git refuses anywhere in a ref name (besides control characters): check-ref-format rules 4, 5 and 10.
_REFUSED = {" ": "a space", "~": "'~'", "^": "'^'", ":": "':'", "?": "'?'", "*": "'*'", "[": "'['",
            "\\": "a backslash"}
#: A component longer than a file name may be on the Hub's disk (and ours) is no ref.
MAX_COMPONENT_BYTES = 255


def revision_problem(revision: str) -> str | None:
    """Why ``revision`` is no branch, tag, commit or pull-request ref the Hub can have (a few words), None when it
    may be one."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in revision):
        return "it holds a control character"
    if revision.startswith("/"):
        return "an absolute path, not a ref name"
    if len(revision) >= 2 and revision[1] == ":" and revision[0].isalpha():
        return "a drive-anchored path, not a ref name"
    for char, said in _REFUSED.items():
        if char in revision:
            return f"it holds {said}"
    if ".." in revision:
        return "it holds '..'"
    if "@{" in revision or revision == "@":
        return "it holds '@{'" if "@{" in revision else "'@' alone is no ref name"
    parts = revision.split("/")
    if any(not part for part in parts):
        return "an empty path component ('/' at an end or '//')"
    for part in parts:
        if part.startswith("."):
            return f"the component {part!r} starts with '.'"
        if part.endswith(".lock"):
            return f"the component {part!r} ends with '.lock'"
        if len(part.encode("utf-8", errors="replace")) > MAX_COMPONENT_BYTES:
            return f"a component longer than {MAX_COMPONENT_BYTES} bytes"
    if revision.endswith("."):
        return "it ends with '.'"
    return None
