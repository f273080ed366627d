"""The Memory Store protocol, without I/O: what each operation sends and how each answer reads.

``apis`` lists the service's APIs, ``plans`` writes each port operation as a generator of
calls, ``bodies`` builds request bodies, ``answers`` (through ``answer_fields``) decodes the
answers and ``wire`` removes their envelope. Both stores run the same plans.

May import: ``memcore`` (the core) and this folder; no SDK, no socket, no clock but ``time``.
"""
