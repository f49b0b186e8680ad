"""The inventory is loaded (a child process, seconds) once, and again only when its file changes."""

from __future__ import annotations

from pathlib import Path

from fixtures.responder import write_inventory
from vllm_remedy.respond.inventory import Cache


def test_loaded_once_then_again_when_the_file_changes(tmp_path: Path) -> None:
    path = write_inventory(tmp_path, "auto")
    cache = Cache(path)
    first = cache.hosts()
    assert [h.name for h in first] == ["@k8s/rehearsal/llm/llama-8b"] and cache.loads == 1
    assert first[0].data["respond"]["annotation_prefix"] == "vllm-remedy.io/"
    assert cache.hosts() is first and cache.hosts(max_age=3600) is first and cache.loads == 1
    Path(path).write_text(Path(path).read_text().replace("llama-8b'", "llama-70b'"))
    assert [h.name for h in cache.hosts()] == ["@k8s/rehearsal/llm/llama-70b"] and cache.loads == 2
