"""The ``memcore`` console script: interrupt handling first, then the app.

Importing the app (Typer, click) takes tens of milliseconds; Ctrl-C in that time raised a
traceback. Here it is one ``memcore: interrupted`` line and exit code 130, like later.
"""

import signal
import sys

from memcore_cli.output.interrupts import report


def main() -> None:
    """Console-script entry point: the app is imported inside the interrupt handling."""
    try:
        from memcore_cli.app import main as run

        run()
    except KeyboardInterrupt as exc:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the process ends with this one line
        sys.exit(report(str(exc)))
