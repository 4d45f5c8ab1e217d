# Gateway replica and replication service of the distributed topology (docker-compose and
# Kubernetes mount this file at /etc/svc/gateway.hcl). Passwords come from the environment: SVC_PG_CONNECTION_URL,
# SVC_NATS_PASSWORD, SVC_REDIS_PASSWORD (deploy/make-secrets.sh writes them to gateway.env).
listener "tcp" {
  address     = "0.0.0.0:8200"
  tls_disable = true # terminate TLS at the ingress, or set tls_cert_file / tls_key_file
  # Bound by the replication service only (mutual TLS of its own): secondaries of other clusters dial it.
  cluster_address = "0.0.0.0:8201"
}

storage "postgresql" {
  connection_url = "postgres://svc@postgres:5432/svc"
}

bus "nats" {
  servers          = ["tls://nats:4222"]
  user             = "gateway"
  inbox_prefix     = "_INBOX_gateway" # the only reply subjects nats.conf lets this user read
  tls_ca_file      = "/etc/svc/tls/ca.crt"
  tls_cert_file    = "/etc/svc/tls/client.crt"
  tls_key_file     = "/etc/svc/tls/client.key"
  cluster_key_file = "/etc/svc/cluster.key"
}

locks "redis" {
  address = "redis:6379"
}

# The address clients use: compose's network alias and the Kubernetes Service of the gateways.
api_addr  = "http://gateway:8200"
# The address secondaries dial for the cluster link: the replication service (compose's service
# and the Kubernetes Service); give the one other clusters reach.
cluster_addr = "https://replication:8201"
log_level = "info"
# Gateway worker processes per replica. Pinned rather than one per CPU: a container sees the
# host's CPUs, not its own share, and the pod's memory limit (deploy/k8s/gateway.yaml) fits two.
workers = 2
