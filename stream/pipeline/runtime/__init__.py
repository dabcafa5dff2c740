"""The Faust runtime of the worker (app, agents, compat patches, producer, topics, watchdog, worker): the only
package that imports Faust, mode or aiokafka (tests/test_runtime_boundary.py); the handlers never import it.
"""
