"""Errors a user can fix: the CLI prints them as one line and exits 2, having changed nothing."""

from __future__ import annotations


class UserError(Exception):
    """Bad input: the message names the file, host or key and what was expected.

    Raise it before any write so that "nothing changed" holds; the CLI turns it into
    ``vllm-remedy: error: <message>`` on stderr and exit status 2.
    """

    exit_code = 2
