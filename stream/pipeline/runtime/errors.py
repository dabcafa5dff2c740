"""aiokafka's errors of an unreachable or overloaded broker: what :mod:`stream.pipeline.retry`
retries forever as ``transient`` (with Redis's), named here so that only the runtime imports aiokafka."""

from __future__ import annotations

from aiokafka.errors import KafkaConnectionError, KafkaTimeoutError, NotEnoughReplicasError, RequestTimedOutError

KAFKA_TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    KafkaConnectionError,
    KafkaTimeoutError,
    RequestTimedOutError,
    NotEnoughReplicasError,
)
