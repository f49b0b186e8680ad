import sys

from vllm_remedy.cli import main

sys.exit(main())
