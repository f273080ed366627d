"""What one invocation runs against: the global options, the config file, the data home,
the backend choice and the scope.

Imports the core (config, scope, errors) and, to read a Hermes home, the plugin's ``config``;
no other folder of the CLI, and it opens no store. ``options`` imports nothing of the CLI, so
``--help`` stays light.
"""
