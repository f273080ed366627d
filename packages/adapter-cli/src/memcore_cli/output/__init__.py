"""What the CLI prints: tables, plain lines or JSON (``render``), the stable JSON records
scripts read, and the exit codes.

A bottom layer: imports nothing else of the CLI.
"""
