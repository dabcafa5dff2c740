"""Streaming Elo-MMR rating service.

Layers, imported one way only: interfaces (``cli``, ``api``) → ``pipeline`` →
``store`` / ``engine``.  ``engine`` is pure maths and imports nothing of ours;
``contracts`` holds the event formats shared by every layer.
"""

__version__ = "0.1.0"
