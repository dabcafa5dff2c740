"""Streaming Elo-MMR rating service. Layers, imported one way only: ``cli``, ``api`` → ``pipeline`` → ``store`` /
``engine`` / ``contracts`` (the event formats) → ``settings``; ``engine`` is pure maths and imports nothing of ours.
"""

__version__ = "0.1.0"
