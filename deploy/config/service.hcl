# Engine services (transit, database, cloud) and the sync worker: the same storage, bus and locks as the gateways, as
# NATS user "service". Passwords come from the environment (service.env). Requests reach a service
# only over NATS; its listener serves its health, for the probes, and nothing else unless its
# telemetry block lets it serve the service's metrics too (docs/metrics.md).
listener "tcp" {
  address     = "0.0.0.0:8210"
  tls_disable = true
  # telemetry {
  #   unauthenticated_metrics_access = true   # /v1/sys/metrics here, without a token: keep the port internal
  # }
}

storage "postgresql" {
  connection_url = "postgres://svc@postgres:5432/svc"
}

bus "nats" {
  servers          = ["tls://nats:4222"]
  user             = "service"
  inbox_prefix     = "_INBOX_service" # the only reply subjects nats.conf lets this user read
  tls_ca_file      = "/etc/svc/tls/ca.crt"
  tls_cert_file    = "/etc/svc/tls/client.crt"
  tls_key_file     = "/etc/svc/tls/client.key"
  cluster_key_file = "/etc/svc/cluster.key"
}

locks "redis" {
  address = "redis:6379"
}

log_level = "info"

# The sync worker calls the providers' public APIs; sovereign clouds or an enterprise code host
# are set here (docs/configuration.md, docs/sync.md).
# provider_endpoints {
#   codehost = "https://github.example.com/api/v3"
# }
