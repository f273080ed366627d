"""What a user typed, turned into values: global options moved in front of the command,
option values converted without pydantic, ``key=value`` maps, ``--since`` selections, and an
option's text given as unquoted words (``update ID --text green tea``).

A bottom layer: imports nothing else of the CLI.
"""
