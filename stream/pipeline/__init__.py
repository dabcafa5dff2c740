"""The streaming pipeline: Faust agents that rate rounds from Kafka into Redis.

The modules and the design (how stream equals replay within 1e-9 through crashes, step by step)
are outlined in docs/design.md; each module's docstring details its part.
"""
