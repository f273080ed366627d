"""What a user typed, turned into values: global options moved in front of the command,
option values converted without pydantic, ``key=value`` maps and ``--since`` selections.

A bottom layer: imports nothing else of the CLI.
"""
