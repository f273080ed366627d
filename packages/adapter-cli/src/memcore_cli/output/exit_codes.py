"""The CLI's exit codes: the core's, shared with ``hermes tablestore-mem``."""

from memcore.exit_codes import ExitCode, exit_code_for

__all__ = ["ExitCode", "exit_code_for"]
