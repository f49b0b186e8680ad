"""Which releases' sources the rules were read from, and the label every output prints for a version's rules.

Apart from ``versions`` (parsing versions and the rules each release applies) because the wording — ``modelled``,
``extrapolated from 0.33.0``, ``unknown (rules of the newest release, 0.34.0)`` — changes with what was read, never
with what a release does. ``versions.VersionRules`` carries it through :class:`Labelled`.
"""

from __future__ import annotations

# Every release from 0.21.0 to 0.34.0 was read from its PyPI sdist (vllm-X.tar.gz): v1/worker/gpu_worker.py,
# v1/worker/gpu/model_runner.py (Model Runner V2), v1/core/kv_cache_utils.py (kv_cache_planning.py from 0.33),
# config/{cache,scheduler,vllm}.py, engine/arg_utils.py and envs.py. The rules cite file@version. 0.34.0 sizes
# the KV cache after warmup and graph capture (the "extensible KV cache", default on CUDA), which the memory model
# computes (core.kv_after_warmup).
NEWEST_MODELLED = (0, 34, 0)
# The oldest release the rules are read for: 0.5.5 (vllm-0.5.5 wheel: worker/worker.py, worker/model_runner.py,
# config.py, engine/arg_utils.py, distributed/parallel_state.py, worker/worker_base.py; and 0.6.0-0.6.4's worker.py and
# parallel_state.py for what changed in between). An older one gets 0.5.5's rules, labelled as extrapolated.
OLDEST_MODELLED = (0, 5, 5)
# The newest vLLM release known here (0.34.0 on PyPI, December 2026): an unknown version gets its rules.
NEWEST_RELEASE = (0, 34, 0)
# The last patch release of each minor whose rules apply as read (the sources above; before 0.21 the tags and logs
# the rules cite); a minor not listed was read at .0 only. A later patch of a minor (0.27.2, 0.33.1, a typo'd 0.33.99)
# was never read, so its rules are that minor's last read release's, extrapolated, as a newer release's are.
LAST_READ_PATCH: dict[tuple[int, int], int] = {
    (0, 5): 5, (0, 6): 6, (0, 7): 3, (0, 8): 5, (0, 9): 2, (0, 10): 2, (0, 11): 2, (0, 14): 1, (0, 15): 1, (0, 17): 1,
    (0, 18): 1, (0, 19): 1, (0, 20): 1, (0, 22): 1, (0, 25): 1, (0, 26): 1, (0, 27): 1,
}
# A patch, spelt .postN (0.6.4.post1) or with a fourth number (0.10.1.1, vLLM's patch of 0.10.1), carries its release's
# rules and is modelled only where its own source or logs were read, else extrapolated from the release it follows.
# Read: 0.6.4.post1 and 0.6.6.post1 (worker.py, utils.py: memory/post_capture.py; calibration logs), 0.8.5.post1 (logs);
# not 0.6.3.post1, nor 0.34.0.post1.
READ_POST: dict[tuple[int, int, int], int] = {(0, 6, 4): 1, (0, 6, 6): 1, (0, 8, 5): 1}
# Read: 0.10.1.1 (arg_utils.py, gpu_worker.py, envs.py at its tag, cited in versions and v1_oracle; logs); not 0.10.1.2.
READ_FOURTH: dict[tuple[int, int, int], int] = {(0, 10, 1): 1}


def nearest_read(v: tuple[int, int, int]) -> tuple[int, int, int]:
    """The release whose source the rules of ``v`` were read from: ``v`` itself when it was read, else the nearest one
    read (0.5.5 below the oldest, 0.34.0 above the newest, 0.27.1 for a 0.27.2)."""
    if v < OLDEST_MODELLED:
        return OLDEST_MODELLED
    if v > NEWEST_MODELLED:
        return NEWEST_MODELLED
    last = LAST_READ_PATCH.get(v[:2], 0)
    return (v[0], v[1], last) if v[2] > last else v


def dotted(version: tuple[int, int, int]) -> str:
    """``(0, 34, 0)`` → ``"0.34.0"``."""
    return ".".join(map(str, version))


def newest_rules() -> str:
    """What an unknown version is sized by: ``rules of the newest release, 0.34.0`` (and, were that release not read,
    what they are extrapolated from)."""
    read = nearest_read(NEWEST_RELEASE)  # the newest release as named: no pre-release, post or fourth part
    made = f", extrapolated from {dotted(read)}" if read != NEWEST_RELEASE else ""
    return f"rules of the newest release, {dotted(NEWEST_RELEASE)}{made}"


class Labelled:
    """Mixin over ``versions.VersionRules``' version fields: where its rules come from, and its label."""

    version: tuple[int, int, int]
    known: bool
    shown: str
    pre: str
    post: int
    fourth: int

    @property
    def read_from(self) -> tuple[int, int, int]:
        """The release whose source the rules were read from: the version itself when it was read, else the nearest
        one read (0.5.5 below the oldest, 0.34.0 above the newest, 0.27.1 for a 0.27.2)."""
        return nearest_read(self.version)

    @property
    def extrapolated(self) -> bool:
        """A known version whose source was not read: its rules are the nearest read release's (``read_from``); a patch
        past the ones read, from the release it follows; a pre-release, from the release before it (``version``)."""
        return self.known and (self.read_from != self.version or bool(self.pre)
                               or self.post > READ_POST.get(self.version, 0)
                               or self.fourth > READ_FOURTH.get(self.version, 0))

    @property
    def pre_release(self) -> bool:
        """A pre-release (a, b, rc, dev): it precedes its release, so it runs the rules before it (extrapolated)."""
        return self.known and bool(self.pre)

    @property
    def provenance(self) -> str:
        """Where the rules come from: ``modelled``, ``extrapolated from 0.33.0`` (0.34.0.dev0's: it precedes 0.34.0) or,
        for an unknown version, ``unknown version: rules of the newest release, 0.34.0``."""
        if not self.known:
            return f"unknown version: {newest_rules()}"
        if self.extrapolated:
            read = self.read_from
            # a pre-release of a patch precedes that patch: 0.8.5.post1.dev3 follows 0.8.5, 0.10.1.2rc1 0.10.1.1
            post, fourth = (self.post - 1, 0) if self.pre and self.post else (self.post, self.fourth - bool(self.pre))
            post = min(post, READ_POST.get(read, 0)) if post > 0 and read == self.version else 0
            fourth = min(fourth, READ_FOURTH.get(read, 0)) if fourth > 0 and read == self.version else 0
            return f"extrapolated from {dotted(read)}{f'.{fourth}' if fourth else ''}{f'.post{post}' if post else ''}"
        return "modelled"

    @property
    def qualified(self) -> bool:
        """Whether the label must say where the rules come from: their release is not the one named."""
        return self.extrapolated

    @property
    def label(self) -> str:
        """The version as every output prints it, as typed or logged; never a bare number unless its rules were read
        from that release's source: ``0.35.0rc1 (rules: extrapolated from 0.34.0)``, ``0.34.0rc2 (rules: extrapolated
        from 0.33.0)``, ``unknown (rules of the newest release, 0.34.0)``."""
        if not self.known:
            return f"unknown ({newest_rules()})"
        return f"{self.display} (rules: {self.provenance})" if self.qualified else self.display

    @property
    def display(self) -> str:
        """The version alone, as typed or logged (``0.35.0rc1``); ``unknown`` when none was given."""
        return (self.shown or dotted(self.version)) if self.known else "unknown"
