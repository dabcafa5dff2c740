"""The embedded local stack: a Kafka-protocol broker (Tansu) and a private redis-server."""
