"""``vllm serve ... --config FILE`` whose model is not the first word after ``serve``: what vLLM's splice does.

``FlexibleArgumentParser.parse_args`` replaces ``--config FILE`` with the file's flags before argparse runs
(``_pull_args_from_config``), and for ``serve`` it takes ``args[1]`` (the first word after ``serve``) to be the model:

* 0.6.0-0.6.2: the file's flags go right after ``serve`` (utils.py@0.6.0 l.1168): no position rule;
* 0.6.3-0.8.0: ``--config`` as that first word raises ``ValueError: No model_tag specified! Please check your
  command-line arguments.``; otherwise the file's flags are spliced in after ``args[1]`` (utils.py@0.7.3 l.1245-1252,
  @0.8.0 l.1267-1274), so a first word that is an option waiting for its value (``--max-model-len 16384 MODEL``)
  gets a ``--flag`` from the file instead: argparse's ``argument --max-model-len: expected one argument``;
* the OpenAI api_server module (0.6.0-0.10.1): the file's flags go after its first word whatever it is, so a first
  option waiting for its value (``--model M --config f.yaml``) is refused the same way (fixed in 0.10.2);
* 0.8.3-0.34.0: ``model_in_cli = not args[1].startswith('-')``; without it and without a ``--model`` word from the
  file, ``ValueError: No model specified! Please specify model either as a positional argument or in a config
  file.`` (utils.py@0.8.3 l.1343-1349, utils/__init__.py@0.10.0 l.1889-1896, utils/argparse_utils.py@0.12.0
  l.431-439, @0.34.0 l.572-583). From 0.11.1 a ``--model M`` / ``--model=M`` word is moved to the front first
  (``refused.SERVE_MODEL_HOISTED_SINCE``), so it counts as the first word; before, ``--model=M`` does not.

Each ValueError is a traceback and exit 1 before argparse reads a word. The file's content decides only whether it
names the model (0.8.3 on) or adds any flag (the splice before): unread, only the certain case is judged here
(``--config`` first, 0.6.3-0.8.0); the rest stays the unread file's "cannot predict" (``manifest_flags_file``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any

from vllm_remedy.vllm.cmdline.command import ServerCommand
from vllm_remedy.vllm.cmdline.flags import Kind
from vllm_remedy.vllm.cmdline.parse import Option
from vllm_remedy.vllm.cmdline.refused import SERVE_MODEL_HOISTED_SINCE, Refused
from vllm_remedy.vllm.cmdline.release_flags import shown

Version = tuple[int, int, int]
MODEL_TAG_CHECK_SINCE: Version = (0, 6, 3)
MODEL_CHECK_SINCE: Version = (0, 8, 3)
#: Any other program (the OpenAI api_server module: ``args[0]`` is its first word) gets the file's flags after
#: ``args[0]`` (utils.py@0.6.0 l.1168 to utils/__init__.py@0.10.1), until 0.10.2 puts them first when that word is an
#: option ("No sub command (e.g., api_server entry point)", utils/__init__.py@0.10.2, @0.11.0 l.2047-2049).
MODULE_SPLICE_SINCE: Version = (0, 6, 0)
MODULE_FIXED_SINCE: Version = (0, 10, 2)
NO_MODEL_TAG = "ValueError: No model_tag specified! Please check your command-line arguments."
NO_MODEL = ("ValueError: No model specified! Please specify model either as a positional argument or in a config "
            "file.")
_MODEL_WORD = re.compile(r"^--model(=.+|$)")


def refusal(server: ServerCommand, v: Version) -> Refused | None:
    """vLLM ``v``'s refusal of ``server``'s ``--config`` splice, or None (not ``vllm serve``, no ``--config`` word, the
    model first, or the file's content needed and unread)."""
    module = "openai.api_server" in server.entrypoint
    spliced = MODULE_SPLICE_SINCE <= v < MODULE_FIXED_SINCE if module else _serve(server) and v >= MODEL_TAG_CHECK_SINCE
    if not spliced or not server.words:
        return None
    words = [t.value for t in server.words]
    if "--config" not in words or server.placeholder(server.words):
        return None
    at = words.index("--config")
    path = words[at + 1] if at + 1 < len(words) else ""
    if not path or path.rsplit(".", 1)[-1] not in ("yaml", "yml"):
        return None  # another ValueError (no file, not YAML), raised before this one
    config = f"--config {shlex.quote(path)}"
    model = server.model or "MODEL"
    first = words[0]
    if v >= SERVE_MODEL_HOISTED_SINCE and any(_MODEL_WORD.match(w) for w in words):
        return None  # --model moved to the front: the first word is the model
    if module or v < MODEL_CHECK_SINCE:
        if at == 0 and not module:
            return Refused(config, NO_MODEL_TAG, _advice(model, path), exit_code=1)
        if not server.config_file or at == 0:
            return None  # an unread (or empty) file: whether it adds a flag is not known
        opt = next((o for o in server.options if o.tokens and o.tokens[0] is server.words[0]), None)
        if opt is None or opt.flag.attached is not None or opt.flag.kind not in (Kind.VALUE, Kind.MULTI):
            return None  # a bare word or a flag that needs no next word: the splice harms nothing
        many = "at least one argument" if opt.flag.kind is Kind.MULTI else "one argument"
        name = shown(f"--{opt.flag.name}", v) or f"--{opt.flag.name}"
        return Refused(" ".join(shlex.quote(t.value) for t in opt.tokens), f"argument {name}: expected {many}",
                       _module_advice(opt, path) if module else _advice(model, path))
    if not first.startswith("-") or server.config_file is None:
        return None
    if names_model(server.config_file):
        return None
    return Refused(config, NO_MODEL, _advice(model, path), exit_code=1)


def names_model(config: Mapping[str, Any]) -> bool:
    """Whether ``load_config_file`` turns the file into a ``--model`` word, which ``_pull_args_from_config`` looks
    for (``any(arg == '--model' ...)``): a key spelled exactly ``model`` (no dash folding there) whose value is not
    false (a false boolean adds no word)."""
    return any(str(k) == "model" and v is not False for k, v in config.items())


def _serve(server: ServerCommand) -> bool:
    return server.entrypoint.endswith(" serve") or server.entrypoint == "image default"


def _module_advice(opt: Option, path: str) -> str:
    value = opt.values[0] if opt.values else "VALUE"
    return (f"write --{opt.flag.name}={value} as one word: the api_server module splices the {path} flags in right "
            "after its first word")


def _advice(model: str, path: str) -> str:
    return (f"name the model as vllm serve's first argument (vllm serve {model} ... --config {path}): vLLM reads "
            "the word after serve as the model when it splices in the file's flags")
