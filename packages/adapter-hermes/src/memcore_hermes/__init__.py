"""Hermes Agent memory provider ``tablestore-mem`` built on memcore.

Only the provider class is imported here; the core, the spool and the SDKs load when a
session initialises, so Hermes can list providers cheaply.
"""

from memcore_hermes.provider import PROVIDER_NAME, TablestoreMemProvider, register

__all__ = ["PROVIDER_NAME", "TablestoreMemProvider", "register"]
