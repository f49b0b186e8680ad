"""``send_patch`` after an unanswered PATCH: the outcome is read off the object, for a bounded grace period.

The fake API answers each PATCH 504; the "late commit" (what a kube-apiserver may do after a 504) is played by
the sleep between two reads of the object, so each outcome is deterministic.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonpatch
import pytest

from fixtures.kube_fakeapi import FakeApi, started
from fixtures.kube_objects import incident
from vllm_remedy.kube.client import RetryPolicy
from vllm_remedy.kube.errors import KubeError
from vllm_remedy.kube.patch import json_patch, send_patch, with_change_id

KEY, ID = "vllm-remedy.io/change-id", "0123456789abcdef"
KEY_OF = ("deployments", "llm", "llama-8b")
PATH = "/apis/apps/v1/namespaces/llm/deployments/llama-8b"


@pytest.fixture
def api(tmp_path: Path) -> Iterator[FakeApi]:
    fake = started(tmp_path, retry=RetryPolicy(attempts=1))
    fake.add("deployments", incident()[0])
    yield fake
    fake.stop()


def ours(api: FakeApi) -> list[dict[str, Any]]:
    """A guarded patch stamping our id (and a template label) on the Deployment as it is now."""
    basis = api.get(*KEY_OF)
    wanted = jsonpatch.apply_patch(basis, [{"op": "add", "path": "/metadata/labels/fixed", "value": "yes"}])
    return with_change_id(basis, json_patch(basis, wanted), KEY, ID)


def commit(api: FakeApi, ops: list[dict[str, Any]]) -> Callable[[float], None]:
    """A sleep during which the API server commits ``ops`` (the PATCH it answered 504)."""
    def sleep(_: float) -> None:
        if ops:
            api.rv += 1
            done = jsonpatch.apply_patch(api.get(*KEY_OF), ops)
            done["metadata"]["resourceVersion"] = str(api.rv)
            api.objects[KEY_OF] = done
            ops.clear()
    return sleep


def test_a_patch_committed_after_its_504_is_written(api: FakeApi) -> None:
    ops = ours(api)
    api.faults = [504]
    got = send_patch(api.client, PATH, ops, change=(KEY, ID), grace=30.0, sleep=commit(api, list(ops)))
    assert got["metadata"]["annotations"][KEY] == ID
    assert [s.method for s in api.seen] == ["PATCH", "GET", "GET"]  # the late commit was waited for


def test_an_object_that_moved_on_without_our_id_means_nothing_was_written(api: FakeApi) -> None:
    ops = ours(api)
    theirs = [{"op": "add", "path": "/metadata/labels/theirs", "value": "1"}]
    api.faults = [504]
    with pytest.raises(KubeError, match=r"change 0123456789abcdef is not on the object, which moved on "
                                        r"\(resourceVersion \d+ → \d+\) so it can no longer land: nothing was written"):
        send_patch(api.client, PATH, ops, change=(KEY, ID), grace=30.0, sleep=commit(api, theirs))


def test_no_outcome_within_the_grace_period_is_unknown_never_nothing_written(api: FakeApi) -> None:
    api.faults = [504]
    started = time.monotonic()
    with pytest.raises(KubeError) as err:
        send_patch(api.client, PATH, ours(api), change=(KEY, ID), grace=0.6)
    assert 0.5 <= time.monotonic() - started < 5
    assert "outcome unknown: the API did not answer; change 0123456789abcdef may still land — rerun to see" \
        in str(err.value)
    assert "nothing was written" not in str(err.value)


def test_a_refusal_is_an_answer_not_a_lost_one(api: FakeApi) -> None:
    api.faults = [403]
    with pytest.raises(KubeError, match=r"is not on the object: nothing was written$"):
        send_patch(api.client, PATH, ours(api), change=(KEY, ID), grace=30.0, sleep=lambda _: pytest.fail("polled"))
