"""Talking to the service: the vendor SDK clients and what one attempt's failure means.

``driver`` validates settings and builds ``OTSClient``/``AsyncOTSClient`` (or the vendor's
API-key client, ``agent_storage``), ``error_map`` turns SDK and transport exceptions into
memcore errors, ``retry`` says when and how often a call is sent again, ``sdk_import`` loads
the SDK quietly.

May import: ``memcore``, ``protocol``, ``credentials`` and the vendor SDKs.
"""
