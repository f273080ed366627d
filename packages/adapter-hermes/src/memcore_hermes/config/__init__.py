"""What the plugin reads from ``$HERMES_HOME``: its config file, the ``.env`` secrets, the key
pair, and the one readiness verdict behind ``is_available()``; the Hermes home taken as Hermes
takes it (a ``~`` not expanded); and how a ``~user`` path in a setting is expanded (``home.home_expanded``, the plugin's own: the CLI's and the embedded store's helpers
are not imported for it).

The bottom layer, cheap to import (Hermes imports every provider to ask ``is_available()``):
it imports no other folder of the plugin.
"""
