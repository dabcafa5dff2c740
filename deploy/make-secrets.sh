#!/usr/bin/env bash
# Create the secrets docker-compose.yml reads (random passwords; run once, before `docker compose up`):
#   deploy/make-secrets.sh [DIR]      # DIR defaults to ./secrets (git-ignored)
# Writes, mode 600:
#   kafka_server_jaas.conf  the broker's JAAS file: the `admin` user of the controller and admin
#                           listeners (PLAIN, loopback inside the Kafka container); SCRAM for the others
#   admin.properties        client config of the admin user (kafka-setup: SCRAM users, topics, ACLs)
#   worker.password         SCRAM-SHA-512 password of the `ems-worker` principal
#   producer.password       SCRAM-SHA-512 password of the `ems-producer` principal
#   worker.env              KAFKA_SASL_PASSWORD for the worker containers (env_file)
#   producer.env            the variables `stream publish` needs on the host (source it)
# Existing files are kept (delete DIR to rotate every password; re-run kafka-setup afterwards).
set -euo pipefail
dir="${1:-secrets}"
mkdir -p "$dir"
umask 077

password() { openssl rand -hex 24; }
write() {  # write FILE only if missing; content on stdin
  if [[ -e "$dir/$1" ]]; then cat >/dev/null; else cat >"$dir/$1"; fi
}

[[ -e "$dir/admin.password" ]] || password >"$dir/admin.password"
[[ -e "$dir/worker.password" ]] || password >"$dir/worker.password"
[[ -e "$dir/producer.password" ]] || password >"$dir/producer.password"
admin="$(cat "$dir/admin.password")"
worker="$(cat "$dir/worker.password")"
producer="$(cat "$dir/producer.password")"

write kafka_server_jaas.conf <<JAAS
controller.KafkaServer {
  org.apache.kafka.common.security.plain.PlainLoginModule required
  username="admin" password="$admin" user_admin="$admin";
};
admin.KafkaServer {
  org.apache.kafka.common.security.plain.PlainLoginModule required
  username="admin" password="$admin" user_admin="$admin";
};
internal.KafkaServer {
  org.apache.kafka.common.security.scram.ScramLoginModule required;
};
external.KafkaServer {
  org.apache.kafka.common.security.scram.ScramLoginModule required;
};
JAAS

write admin.properties <<PROPS
security.protocol=SASL_PLAINTEXT
sasl.mechanism=PLAIN
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="$admin";
PROPS

write worker.env <<ENV
KAFKA_SASL_PASSWORD=$worker
ENV

write producer.env <<ENV
export KAFKA_BOOTSTRAP=localhost:9094 KAFKA_SECURITY_PROTOCOL=SASL_PLAINTEXT KAFKA_SASL_MECHANISM=SCRAM-SHA-512
export KAFKA_SASL_USERNAME=ems-producer KAFKA_SASL_PASSWORD=$producer
ENV
echo "secrets in $dir"
