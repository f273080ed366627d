"""First run: buy a TableStore instance when the config names none, save it, wait until it serves.

``provisioner`` runs the steps, ``control_client`` talks to the control plane
(``alibabacloud-tablestore20201209``), ``errors`` maps its failures, ``files`` keeps the lock,
the pending marker and the config, ``wait`` waits for DNS and the data plane.

May import: ``memcore``, ``backend`` (for the data-plane probe), ``credentials``.
"""
