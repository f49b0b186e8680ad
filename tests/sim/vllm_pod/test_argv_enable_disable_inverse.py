"""From 0.33.0 vLLM gives an ``--enable-x``/``--disable-x`` option its inverse only where the option is a
BooleanOptionalAction (utils/argparse_utils.py@0.33.0: ``FlexibleArgumentParser`` registers ``EnableDisableAction``
in place of ``BooleanOptionalAction``); store_true ``--disable-log-stats`` (engine/arg_utils.py@0.33.0 l.1920) and the
valued ``--disable-access-log-for-endpoints`` (entrypoints/common/cli_args.py@0.33.0 l.321) get none. The rehearsal
pod gave every such option an inverse, so ``--enable-log-stats`` started on 0.33.0 where vLLM's argparse (measured:
that release's own FlexibleArgumentParser under CPython 3.12) says ``unrecognized arguments: --enable-log-stats``,
exit 2; and it named an EnableDisableAction ``--enable-lora/--no-enable-lora`` in ``ignored explicit argument``,
where argparse prints the visible strings ``--enable-lora/--disable-lora``. Pods through the served rehearsal cluster
and the official ``kubernetes`` client; `vllm-remedy check` (the tools' own syntax-tree table) says the same."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from fixtures.check_batch import judge, l40s_deployment
from fixtures.served_pods import run, served

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
SERVE = ["vllm", "serve"]
REFUSED = {  # name: (tag, extra args, argparse's message after "error: ", measured on that release's parser)
    "els-0-33": ("v0.33.0", ["--enable-log-stats"], "unrecognized arguments: --enable-log-stats"),
    "els-prefix-0-34": ("v0.34.0", ["--enable-log-stat"], "unrecognized arguments: --enable-log-stat"),
    "ealfe-0-34": ("v0.34.0", ["--enable-access-log-for-endpoints", "/health"],
                   "unrecognized arguments: --enable-access-log-for-endpoints /health"),
    "el-true-0-33": ("v0.33.0", ["--enable-lora=true"],
                     "argument --enable-lora/--disable-lora: ignored explicit argument 'true'"),
    "dl-one-0-34": ("v0.34.0", ["--disable-lora=1"],
                    "argument --enable-lora/--disable-lora: ignored explicit argument '1'"),
    "ep-one-0-33": ("v0.33.0", ["--enable-expert-parallel=1"],
                    "argument --enable-expert-parallel/-ep/--disable-expert-parallel: ignored explicit argument '1'"),
    "esw-x-0-33": ("v0.33.0", ["--enable-sliding-window=x"],
                   "argument --disable-sliding-window/--enable-sliding-window: ignored explicit argument 'x'"),
    "dls-one-0-33": ("v0.33.0", ["--disable-log-stats=1"],
                     "argument --disable-log-stats: ignored explicit argument '1'"),
}
STARTS = {  # the inverses 0.33.0 does register, and the store_true flag as written
    "dl-0-33": ("v0.33.0", ["--disable-lora"]),
    "esw-0-33": ("v0.33.0", ["--enable-sliding-window"]),
    "dls-0-33": ("v0.33.0", ["--disable-log-stats"]),
}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.CoreV1Api]:
    yield from served(tmp_path_factory.mktemp("kube"))


def _said(log: str) -> str:
    last = re.sub(r"^\(APIServer pid=\d+\) ", "", log.splitlines()[-1])
    return last.split(": error: ", 1)[1] if ": error: " in last else last


def test_a_flag_0_33_gives_no_inverse_is_refused_and_check_says_so(api, tmp_path: Path) -> None:
    docs = [l40s_deployment(n, f"vllm/vllm-openai:{t}", [LLAMA, "--max-model-len", "8192", *a])
            for n, (t, a, _m) in REFUSED.items()]
    items, _ = judge(docs, tmp_path)
    for name, (tag, args, message) in REFUSED.items():
        log, code = run(api, name, f"vllm/vllm-openai:{tag}", SERVE, [LLAMA, "--max-model-len", "8192", *args])
        assert (code, _said(log)) == (2, message), (name, log[-800:])
        reasons = [f["reason"] for f in items[name]["findings"] if f["check"] == "flags"]
        assert items[name]["prediction"]["outcome"] == "argument_refused", (name, items[name])
        assert any(message in r and "(exit 2: the pod never starts)" in r for r in reasons), (name, reasons)


def test_the_inverses_0_33_registers_start(api) -> None:
    for name, (tag, args) in STARTS.items():
        log, code = run(api, name, f"vllm/vllm-openai:{tag}", SERVE, [LLAMA, "--max-model-len", "8192", *args])
        assert code is None, (name, log[-800:])


def test_the_rehearsals_option_strings_are_the_tools_on_every_release_read() -> None:
    """The pod's regular-expression table against the tools' syntax-tree one (``release_flags``), 0.33.0 and 0.34.0
    included now: the same long option strings (``--no-`` forms aside: the pod's table holds none), and the same
    ambiguous-prefix messages (inverses listed where argparse registers them, right after their flag)."""
    from vllm_remedy.sim.vllm_pod import argv_options
    from vllm_remedy.vllm.cmdline import release_flags
    from vllm_remedy.vllm.cmdline.release_flags import Verdict

    compared = 0
    for v in (r for r in release_flags.releases() if r >= (0, 33, 0)):
        tools = {o for o in release_flags._read(release_flags.releases().index(v)).options
                 if o.startswith("--") and not o.startswith("--no-")}
        assert set(argv_options.options(v, True)) == tools, v
        parser = release_flags.parser_for(".".join(map(str, v)))
        for prefix in ("--disable-l", "--enable-l", "--disable-", "--enable-log", "--disable-log", "--enable-m"):
            verdict, matches = release_flags.judge(prefix, parser)
            assert verdict is Verdict.AMBIGUOUS, (v, prefix)
            assert argv_options.ambiguous(prefix, v) == f"ambiguous option: {prefix} could match {', '.join(matches)}"
            compared += 1
        for word in ("--enable-log-stats", "--enable-access-log-for-endpoints", "--enable-log-stat"):
            assert release_flags.judge(word, parser)[0] is Verdict.UNKNOWN and argv_options.unknown(word, v)
    assert compared == 12
