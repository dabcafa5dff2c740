"""The Faust runtime of the worker: the only package that imports Faust, mode or aiokafka.

* ``app``: the ``faust.App`` built from Settings, with its agents, timers and topics;
* ``agents``: thin agents that take batches off Faust's streams and call the plain handlers
  (``stream.pipeline.rounds_batches``, ``updates_batches``, ``corrections_batches``, matchmaking);
* ``compat``: the patches of Faust's and aiokafka's internals, each named for what it fixes;
* ``producer``: the aiokafka producer of the worker's outputs (record batches per partition);
* ``topics``: the Faust topic objects (names and administration: ``stream.pipeline.topics``);
* ``watchdog``: the stalled-partition watchdog (reads the consumer's positions and commits);
* ``worker``: the Faust worker with its log level and graceful stop;
* ``credentials``: Faust's broker URLs and credentials from the connection settings;
* ``errors``: aiokafka's transient errors, retried by ``stream.pipeline.retry``.

Nothing outside this package imports Faust, mode or aiokafka (tests/test_runtime_boundary.py);
the handlers never import it: they see messages, a context and an outbox.
"""
