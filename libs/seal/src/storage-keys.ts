/** The only physical entries written outside the barrier: the config in clear, the rest ciphertext. */
export const SEAL_STORAGE_KEYS = {
  config: 'core/seal-config',
  rootKey: 'core/root-key',
  keyring: 'core/keyring',
  /** An auto-unseal seal's recovery key, under the root key. */
  recoveryKey: 'core/recovery-key',
} as const;
