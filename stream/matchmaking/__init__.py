"""Matchmaking: form the fairest matches the ratings allow (issue 27; DESIGN.md "Matchmaking").

Pure (engine layer and numpy, no I/O): :mod:`.queues` parses ``QUEUES``, :func:`form_matches`
runs one tick over a queue's waiting tickets; the service (pool in Redis, topics, worker) calls
it (:func:`warm_up` at start-up builds the odds table the first tick would build).
:mod:`.simulate` closes the loop in process (``stream simulate``).
"""

from .odds import warm_up
from .queues import QueueConfig, Tolerance, WideningStep, parse_queues
from .tick import form_matches
from .tickets import FormedMatch, Ticket, TicketColumns, TickResult, ticket_problem

__all__ = ["FormedMatch", "QueueConfig", "Ticket", "TicketColumns", "TickResult", "Tolerance", "WideningStep", "form_matches",
           "parse_queues", "ticket_problem", "warm_up"]
