"""``--compilation-config`` / ``-O`` / ``--optimization-level`` as each release reads them (``cmdline.compilation``):
which settings leave V1 without CUDA graphs, without compilation, or with the config's capture sizes, and which value
argparse refuses (hostile review, findings 1-2)."""

from __future__ import annotations

import pytest

from vllm_remedy.vllm.cmdline.compilation import Compilation, read, refusal

V085, V0110, V0120, V0140, V0340 = (0, 8, 5), (0, 11, 0), (0, 12, 0), (0, 14, 0), (0, 34, 0)


@pytest.mark.parametrize(("flags", "version", "want"), [
    ({"compilation-config": '{"cudagraph_mode": "NONE"}'}, V0110, Compilation(graphs_off=True)),
    ({"compilation-config": '{"cudagraph_mode": "none"}'}, V0340, Compilation(graphs_off=True)),
    ({"optimization-level": "0"}, V0110, Compilation(graphs_off=True, compile_off=True)),  # -O0 = -O.level=0
    ({"optimization-level": "0"}, V0120, Compilation(graphs_off=True, compile_off=True)),  # --optimization-level 0
    ({"optimization-level": ".cudagraph_mode=NONE"}, V0110, Compilation(graphs_off=True)),
    ({"optimization-level": ".cudagraph_mode=NONE"}, V0120, Compilation(graphs_off=True)),  # -cc.x there
    ({"optimization-level": ".cudagraph_mode=NONE"}, V0140, Compilation()),  # an optimization level from 0.14
    ({"compilation-config": '{"level": 0}'}, V0110, Compilation(graphs_off=True, compile_off=True)),
    ({"compilation-config": '{"level": 2}'}, V0110, Compilation(graphs_off=True)),  # compiled, no graphs
    ({"compilation-config": '{"mode": 0}'}, V0120, Compilation(graphs_off=True, compile_off=True)),
    ({"compilation-config": '{"mode": "VLLM_COMPILE"}'}, V0120, Compilation()),
    ({"compilation-config": '{"mode": 0}'}, V0110, Compilation()),  # no `mode` key before 0.12
    ({"compilation-config": '{"level": 0}'}, V0340, Compilation()),  # `level` gone from 0.18
    ({"compilation-config": '{"use_cudagraph": false}'}, V0110, Compilation(graphs_off=True)),
    ({"compilation-config": "{'level': 0}"}, V085, Compilation(graphs_off=True, compile_off=True)),  # literal_eval
    ({"optimization-level": "3"}, V0110, Compilation()),
    ({"compilation-config.cudagraph_capture_sizes": "[1, 2, 4]"}, (0, 9, 0),
     Compilation(max_capture=4, sizes_set=True)),
    ({"compilation-config.level": "0"}, V085, Compilation()),  # no dotted keys before 0.9.0
    ({"compilation-config": '{"cudagraph_capture_sizes": [1, 2, 4]}'}, V0110,
     Compilation(max_capture=4, sizes_set=True)),
    ({"compilation-config": '{"max_cudagraph_capture_size": 64}'}, V0120, Compilation(max_capture=64, sizes_set=True)),
    ({"compilation-config": '{"max_capture_size": 8}'}, V0110, Compilation()),  # never an input field
    # the dotted dict is appended after every argument: it replaces a JSON value (0.9.2-0.34.0)
    ({"compilation-config": '{"cudagraph_mode": "NONE"}', "optimization-level": "3"}, V0110, Compilation()),
    ({"compilation-config": '{"cudagraph_mode": "NONE"}', "compilation-config.mode": "3"}, V0340, Compilation()),
])
def test_what_the_compilation_flags_leave(flags: dict[str, str], version: tuple[int, int, int],
                                          want: Compilation) -> None:
    assert read(flags, version) == want


def test_malformed_json_is_argparse_s_refusal_with_the_release_s_option_strings() -> None:
    assert refusal("{bad", V0110) == (
        "argument --compilation-config/-O: 1 validation error for CompilationConfig\n  Invalid JSON: key must be a "
        "string at line 1 column 2 [type=json_invalid, input_value='{bad', input_type=str]")
    assert refusal("{bad", V0120).startswith("argument --compilation-config/-cc: 1 validation error")
    assert refusal("{bad", (0, 9, 0)) == "argument --compilation-config/-O: invalid <lambda> value: '{bad'"
    assert refusal("{bad", V085) is None  # ast.literal_eval's SyntaxError passes argparse: a traceback, not judged
    assert refusal('{"level": 3}', V0110) is None
    assert refusal("3", V0110) is None
    assert refusal("{bad", V0120, dash_o=True) is None  # -O is --optimization-level there


def test_keys_the_release_lacks_are_refused_from_0_13() -> None:
    """CompilationConfig forbids extra keys from 0.13.0: ``level`` left in 0.18.0, ``max_capture_size`` was never an
    input field."""
    assert refusal('{"level": 0}', (0, 20, 0)) == (
        "argument --compilation-config/-cc: 1 validation error for CompilationConfig\nlevel\n  Unexpected keyword "
        "argument [type=unexpected_keyword_argument, input_value=0, input_type=int]")
    assert refusal('{"level": 0}', (0, 17, 0)) is None
    assert "max_capture_size\n  Unexpected keyword argument" in refusal('{"max_capture_size": 8}', (0, 13, 0))
    assert refusal('{"max_capture_size": 8}', V0120) is None  # ignored before 0.13.0
    assert refusal('{"mode": 0, "cudagraph_mode": "NONE"}', V0340) is None
