/**
 * The built-in `default` policy: what every ordinary token needs to manage itself, its cubbyhole
 * and response wrapping. Operators may edit it but not delete it (the policy store enforces that).
 */
export const DEFAULT_POLICY_TEXT = `# The token may look itself up.
path "auth/token/lookup-self" {
  capabilities = ["read"]
}

# The token may renew and revoke itself.
path "auth/token/renew-self" {
  capabilities = ["update"]
}

path "auth/token/revoke-self" {
  capabilities = ["update"]
}

# The token may ask what it can do on a path.
path "sys/capabilities-self" {
  capabilities = ["update"]
}

# The UI shows what the token's combined policies allow.
path "sys/internal/ui/resultant-acl" {
  capabilities = ["read"]
}

# Leases the token holds may be renewed and inspected.
path "sys/leases/renew" {
  capabilities = ["update"]
}

path "sys/leases/lookup" {
  capabilities = ["update"]
}

# The token's private storage.
path "cubbyhole/*" {
  capabilities = ["create", "read", "update", "delete", "list"]
}

# Response wrapping: wrap data, inspect and unwrap a wrapping token.
path "sys/wrapping/wrap" {
  capabilities = ["update"]
}

path "sys/wrapping/lookup" {
  capabilities = ["update"]
}

path "sys/wrapping/unwrap" {
  capabilities = ["update"]
}

# Hashing helpers.
path "sys/tools/hash" {
  capabilities = ["update"]
}

path "sys/tools/hash/*" {
  capabilities = ["update"]
}

# Requesting access through a control group.
path "sys/control-group/request" {
  capabilities = ["update"]
}
`;

export const DEFAULT_POLICY = 'default';
