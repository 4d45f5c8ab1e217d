# Gateway replica of the distributed topology (docker-compose and Kubernetes).
listener "tcp" {
  address     = "0.0.0.0:8200"
  tls_disable = true # terminate TLS at the ingress, or set tls_cert_file / tls_key_file
}

storage "postgresql" {
  connection_url = "postgres://svc:svc@postgres:5432/svc"
}

bus "nats" {
  servers = ["nats://nats:4222"]
}

locks "redis" {
  address = "redis:6379"
}

api_addr  = "http://gateway:8200"
log_level = "info"
