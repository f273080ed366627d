"""The provisioner fixtures (control-plane twin, credentials, clock, ``make``) for this folder.

They live in ``../conftest_provisioner.py`` so that the test modules can also import its
constants and classes (as ``tablestore_conftest_provisioner``); importing the fixtures here
registers them once for every module below, instead of each module re-exporting them.
"""

from tablestore_conftest_provisioner import (  # noqa: F401 - fixtures, found by pytest by name
    clock,
    config_path,
    control_endpoint,
    control_plane,
    credentials,
    make,
)
