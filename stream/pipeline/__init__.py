"""The streaming pipeline: Faust agents that rate rounds from Kafka into Redis.

Layout. The Faust runtime: ``app.py`` (the faust.App from Settings), ``topics.py`` (topic
declarations and creation), ``agents.py`` (thin agents), ``watchdog.py``, ``producer.py``,
``compat.py`` (every Faust/aiokafka patch and private-attribute access). Plain code, testable
without Kafka: ``rounds_batches.py`` / ``updates_batches.py`` / ``corrections_batches.py`` (an
agent's work on one batch: retries, one-by-one fallbacks, dead letters), ``phase_one.py`` /
``phase_two.py`` (the handlers), ``chains.py`` (phase two's chain rule), ``barrier.py``
(per-player barrier), ``outbox.py`` (records to send), ``partitioner.py`` (Kafka's murmur2),
``messages.py`` (messages, sections of ``player-updates``), ``metrics.py`` (Prometheus),
``context.py`` (shared dependencies), ``corrections.py`` (voids, amends, inserts of late rounds: hold the ladder,
re-rate it, write what changed), ``rerate.py`` (a ladder's history rated again in process, per
participation), ``hold.py`` (phase one waits while a correction holds its ladder), ``backfill.py``.

Design (the guarantee: after the stream drains, Redis equals ``stream.batch.replay`` of the
same rounds within 1e-9, whatever the number of workers and partitions):

1. ``rounds`` is keyed by ladder, so a ladder is one partition, read in publish order by the
   phase-one agent (one actor per partition: ladders on different partitions run in parallel).
   A round read under another key is forwarded, keyed by its ladder (``messages.misrouted``).
2. Phase one registers the round id once per ladder (Lua): the first registration assigns the
   ladder's next sequence number ``seq``; a re-published round (same content hash) is a
   duplicate; the same id with different content goes to ``rounds-dlq`` as ``conflict``.
   Unparseable or invalid input goes to ``rounds-dlq`` with its reason; outcome-free rounds
   are recorded (status ``no_outcome``) and rate nobody.
3. Phase one takes a batch of rounds as a unit (``phase_one.handle_rounds``): one round trip
   registers them and reads every participant's state. Per-player barrier: before rating a
   player's first round of the batch, phase one waits until their ``queued_seq`` (set by the
   phase one of their previous round) equals their ``last_seq`` (set by phase two). So it sees
   the posteriors of every earlier batch, while rounds with disjoint players overlap freely.
   The wait backs off (bounded), warns, and after SWEEP_TIMEOUT_S re-sends the stored fan-out
   of the rounds it waits on. It never returns a prior that already holds the round or a later
   one (``last_seq >= seq``: another attempt rated it; the attempt stops, ``RoundOvertaken``).
4. Per ladder, ONE ``engine.rate_rounds`` call rates the batch's rounds in seq order (waves of
   player-disjoint rounds: a later round of the batch is rated from the posteriors of the
   earlier ones, which phase two will compute and store identically; rounds with teams or
   partial play are rated in the same waves by Elo-MMR for teams, ``teams.py``); every entry names the
   round whose posterior was its prior (``previous_seq``). One round trip marks the players
   ``queued_seq``, STORES each round's fan-out (one PlayerUpdate section per partition, Kafka's
   murmur2 partition of each player id) and marks the rounds ``pending``; then the batch's
   sections go out joined per partition (``messages.join_fanout``). A redelivered round re-sends the
   stored bytes, never recomputes from priors that have moved on. After a crash several attempts
   may rate one round (the redelivery, the sweeper, a later round completing it first): each
   completes the ladder's earlier ``registered`` rounds first, and save_fanout.lua stores a
   fan-out only in seq order and, for a batch, only if the batch's previous round of the ladder
   was stored by the same attempt (its token): the first store wins and is always computed from
   the right priors; a batch's rounds refused are handled again one by one.
5. Phase two takes batches of ``player-updates`` messages, each one or more sections (one
   PlayerUpdate each), keeps only sections that are byte for byte in their round's stored
   fan-out (others are dead-lettered unapplied), loads every named player's packed state once
   (same round trip), applies each (player, round) row by the chain rule (``chains.py``: a
   row whose ``previous_seq`` the player has not reached is a gap, left for later), a
   player's rows in seq order in waves (one ``engine.phase_two`` call per wave), and writes
   everything in two Redis round trips: per-player Lua (skip if ``last_seq >= seq``; state,
   history), then per-round Lua for the rows applied now (results with HSETNX, leaderboard,
   pending count, status ``rated``). Then it emits RatingChange events (key = player); an already-applied player's
   event is re-emitted from the stored round results, so duplicates carry the same
   ``event_id`` and content.
6. Every send is awaited to the broker's acknowledgement before the input event is acked:
   a crash redelivers input, which the idempotent steps above absorb.
7. A correction (``corrections`` topic) holds its ladder (registration answers ``held``: its new
   rounds wait), waits for the ladder's rounds in flight, re-rates the corrected history and
   rewrites the affected rounds and players, emits a RatingChange (kind ``correction``) per
   player whose rating moved, then releases the hold (docs/history.md "Corrections").
8. On a ladder rated by occurred_at (``LADDER_ORDER``), a round older than the ladder's newest is
   registered ``late`` with the ladder held at once; phase one publishes its ``insert``
   correction, which rates it in its place as step 7 does (docs/history.md "Late rounds").
"""
