# Engine services (transit, database, ...): no listener, same storage, bus and locks.
storage "postgresql" {
  connection_url = "postgres://svc:svc@postgres:5432/svc"
}

bus "nats" {
  servers = ["nats://nats:4222"]
}

locks "redis" {
  address = "redis:6379"
}

log_level = "info"
