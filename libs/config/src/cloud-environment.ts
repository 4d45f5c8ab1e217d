/**
 * The environment variables Document 1 names for the cloud provider, honoured before the SDK's own
 * chain by everything that calls it (the cloud-credential engine, cloud-sm sync destinations).
 */

/** Region: the configured one, then CLOUD_REGION, then CLOUD_DEFAULT_REGION, then us-east-1. */
export function cloudRegion(configured: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return configured || env.CLOUD_REGION || env.CLOUD_DEFAULT_REGION || 'us-east-1';
}

/**
 * Credentials: the configured pair, then CLOUD_ACCESS_KEY/CLOUD_SECRET_KEY; undefined leaves the
 * SDK's own chain (AWS_* variables, shared files, instance or task role).
 */
export function cloudCredentials(accessKey: string | undefined, secretKey: string | undefined, env: NodeJS.ProcessEnv = process.env): { accessKeyId: string; secretAccessKey: string } | undefined {
  if (accessKey && secretKey) return { accessKeyId: accessKey, secretAccessKey: secretKey };
  if (env.CLOUD_ACCESS_KEY && env.CLOUD_SECRET_KEY) return { accessKeyId: env.CLOUD_ACCESS_KEY, secretAccessKey: env.CLOUD_SECRET_KEY };
  return undefined;
}
