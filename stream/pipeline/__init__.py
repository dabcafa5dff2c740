"""The streaming pipeline: the plain handlers that rate rounds from Kafka into Redis, driven by
the Faust agents of :mod:`stream.pipeline.runtime` (the only package that imports Faust or aiokafka).

The modules and the design (how stream equals replay within 1e-9 through crashes, step by step)
are outlined in docs/design.md; each module's docstring details its part.
"""
