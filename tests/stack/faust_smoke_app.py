"""A minimal Faust app run as a subprocess worker by test_broker.py: topic → Redis hash.

Usage: python faust_smoke_app.py BOOTSTRAP REDIS_URL APP_ID TOPIC DATADIR
Every event of TOPIC is written to the Redis hash ``smoke:<APP_ID>`` as key → value.
"""

from __future__ import annotations

import sys

import faust
import redis

bootstrap, redis_url, app_id, topic_name, datadir = sys.argv[1:6]

app = faust.App(
    app_id,
    broker=f"kafka://{bootstrap}",
    store="memory://",
    datadir=datadir,  # Faust writes <datadir>/v1 even with memory tables; keep it out of the cwd
    web_enabled=False,
    topic_partitions=4,
    topic_replication_factor=1,
    topic_allow_declare=True,
    consumer_auto_offset_reset="earliest",
    broker_session_timeout=6.0,
    broker_heartbeat_interval=1.0,
)
topic = app.topic(topic_name, key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw", partitions=4)
sink = redis.Redis.from_url(redis_url)


@app.agent(topic)
async def copy_to_redis(stream: faust.Stream) -> None:
    async for event in stream.events():
        sink.hset(f"smoke:{app_id}", event.key, event.value)


if __name__ == "__main__":
    sys.argv = [sys.argv[0], "worker", "--loglevel", "warn"]
    app.main()
