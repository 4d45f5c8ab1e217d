#!/bin/sh
# Makes every secret a deployment of Secrets Service needs, in OUTDIR (default: deploy/secrets,
# git-ignored). docker-compose.yml and the kustomization (deploy/kustomization.yaml) read them
# from there; docs/deployment.md says what each one protects and how to replace it.
#
#   deploy/make-secrets.sh [OUTDIR]
#
# Safe to run again: existing keys, passwords and certificates are kept (delete one to replace
# it); the environment files are rewritten from them every time, and the NATS server and client
# certificates are issued again when the CA no longer verifies them (a new CA, or expiry).
# Needs POSIX sh and openssl.
# K8S_NAMESPACE (default secrets-service) names the namespace in the server certificate's DNS names.
set -eu

out=${1:-$(dirname "$0")/secrets}
namespace=${K8S_NAMESPACE:-secrets-service}
umask 077
mkdir -p "$out"
chmod 700 "$out"
cd "$out"

# Writes a file only if it is missing; stdout of the command becomes its content, with no newline.
keep_or_make() {
  file=$1
  shift
  if [ ! -s "$file" ]; then
    value=$("$@")
    printf '%s' "$value" > "$file.new"
    mv "$file.new" "$file"
    echo "made $out/$file"
  fi
}

# 192 random bits as 48 letters a-p: nats.conf reads the passwords from the environment as
# unquoted values, where a leading digit would make one a number or a parse error.
random_password() {
  openssl rand -hex 24 | tr 0-9 g-p
}

keep_or_make cluster.key openssl rand -base64 32
for password in postgres-password nats-gateway-password nats-service-password redis-password; do
  keep_or_make "$password" random_password
done

if [ ! -s ca.key ] || [ ! -s ca.crt ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
    -subj "/CN=Secrets Service deployment CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout ca.key -out ca.crt 2> /dev/null
  echo "made $out/ca.crt and $out/ca.key"
fi

# issue_certificate NAME SUBJECT EXTENSION...: issues NAME.crt and NAME.key, signed by the CA,
# when the CA does not verify NAME.crt (missing, expired, or signed by an earlier CA) or NAME.key
# is missing.
issue_certificate() {
  name=$1
  subject=$2
  shift 2
  if openssl verify -CAfile ca.crt "$name.crt" > /dev/null 2>&1 && [ -s "$name.key" ]; then
    return
  fi
  printf '%s\n' basicConstraints=critical,CA:FALSE keyUsage=critical,digitalSignature,keyEncipherment "$@" > "$name.ext"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "$subject" \
    -keyout "$name.key" -out "$name.csr" 2> /dev/null
  openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -days 825 \
    -extfile "$name.ext" -out "$name.crt" 2> /dev/null
  rm -f "$name.csr" "$name.ext"
  echo "made $out/$name.crt and $out/$name.key"
}

# The names clients dial: "nats" in compose and inside the namespace, the Service's longer names
# elsewhere in the cluster, localhost through a port-forward.
issue_certificate nats-server /CN=nats extendedKeyUsage=serverAuth \
  "subjectAltName=DNS:nats,DNS:nats.$namespace,DNS:nats.$namespace.svc,DNS:nats.$namespace.svc.cluster.local,DNS:localhost,IP:127.0.0.1"
# What every gateway and engine service presents to NATS, which admits only clients the CA signed.
issue_certificate nats-client "/CN=Secrets Service" extendedKeyUsage=clientAuth

postgres_password=$(cat postgres-password)
redis_password=$(cat redis-password)
nats_gateway_password=$(cat nats-gateway-password)
nats_service_password=$(cat nats-service-password)

# What each program reads from its environment (compose env_file, kustomize secretGenerator envs).
app_env() {
  printf 'SVC_PG_CONNECTION_URL=postgres://svc:%s@postgres:5432/svc\nSVC_NATS_PASSWORD=%s\nSVC_REDIS_PASSWORD=%s\n' \
    "$postgres_password" "$1" "$redis_password"
}
app_env "$nats_gateway_password" > gateway.env
app_env "$nats_service_password" > service.env
printf 'NATS_GATEWAY_PASSWORD=%s\nNATS_SERVICE_PASSWORD=%s\n' "$nats_gateway_password" "$nats_service_password" > nats.env
printf 'POSTGRES_PASSWORD=%s\n' "$postgres_password" > postgres.env
# redis-cli (the health check) reads REDISCLI_AUTH.
printf 'REDIS_PASSWORD=%s\nREDISCLI_AUTH=%s\n' "$redis_password" "$redis_password" > redis.env

chmod 600 ./*
