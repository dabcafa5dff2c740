#!/usr/bin/env bash
# One-shot setup of the compose Kafka (the `kafka-setup` service; idempotent): the SCRAM users,
# the topics and the ACLs of docs/security.md. Runs in the Kafka container's network namespace
# and talks to the admin listener on its loopback (127.0.0.1:9091) as the PLAIN super user.
set -euo pipefail
bin="${KAFKA_BIN:-/opt/kafka/bin}"
secrets="${SECRETS_DIR:-/secrets}"
server=(--bootstrap-server 127.0.0.1:9091 --command-config "$secrets/admin.properties")
partitions="${PARTITIONS:-8}"
app="${APP_ID:-elo-mmr-stream}"

for user in worker producer; do
  "$bin/kafka-configs.sh" "${server[@]}" --alter --entity-type users --entity-name "ems-$user" \
    --add-config "SCRAM-SHA-512=[iterations=8192,password=$(cat "$secrets/$user.password")]"
done

for topic in rounds player-updates rating-changes rounds-dlq; do
  "$bin/kafka-topics.sh" "${server[@]}" --create --if-not-exists --topic "$topic" \
    --partitions "$partitions" --replication-factor 1
done

acl() { "$bin/kafka-acls.sh" "${server[@]}" --add "$@"; }
# Producers: write rounds, nothing else (Describe: the metadata a producer needs for it).
acl --allow-principal User:ems-producer --operation Write --operation Describe --topic rounds
# Workers: read their input topics, write their output topics, create them if missing (the
# worker declares them at start), their own internal topics and consumer group (prefix = APP_ID).
acl --allow-principal User:ems-worker --operation Read --operation Describe --operation Create --topic rounds
acl --allow-principal User:ems-worker --operation Read --operation Write --operation Describe --operation Create \
  --topic player-updates
for topic in rating-changes rounds-dlq; do
  acl --allow-principal User:ems-worker --operation Write --operation Describe --operation Create --topic "$topic"
done
acl --allow-principal User:ems-worker --operation All --resource-pattern-type prefixed --topic "$app"
acl --allow-principal User:ems-worker --operation Read --operation Describe --resource-pattern-type prefixed --group "$app"
echo "kafka-setup: users, topics and ACLs in place"
