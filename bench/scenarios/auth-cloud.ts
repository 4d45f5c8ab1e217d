import { cloudIamLoginData } from '@svc/sdk';
import { alternating, measure, setUp, startDevServer, startFloor, warmUp, type Target } from '../run';
import type { Scenario } from './scenario';

/**
 * iam logins of the cloud auth method through the all-in-one dev server, beside the STS round trip
 * alone (sts-login floor). Both forward to one IAM + STS emulator in its own process
 * (iam-sts-emulator), which checks every signature. The login is one GetCallerIdentity signed once
 * (STS accepts a signed request for 15 minutes, as the emulator does); each login makes a token.
 * Floor and target are measured in alternating rounds.
 */
const CONCURRENCY = 8;

export const authCloudLogin: Scenario = {
  name: 'auth-cloud-login',
  async run() {
    const provider = await startFloor('iam-sts-emulator');
    const { accessKeyId, secretAccessKey } = provider.info as Record<string, string>;
    const server = await startDevServer();
    const floor = await startFloor('sts-login', { FLOOR_PROVIDER_URL: provider.url });
    try {
      await setUp(server.url, server.token, '/v1/sys/auth/cloud', { type: 'cloud' });
      await setUp(server.url, server.token, '/v1/auth/cloud/config/client', { access_key: accessKeyId, secret_key: secretAccessKey, iam_endpoint: provider.url, sts_endpoint: provider.url, sts_region: 'us-east-1' });
      await setUp(server.url, server.token, '/v1/auth/cloud/role/bench', { bound_iam_principal_arn: 'arn:aws:iam::123456789012:user/bench-root', token_ttl: '1h' });
      const body = JSON.stringify({ ...(await cloudIamLoginData({ credentials: { accessKeyId, secretAccessKey } })), role: 'bench' });
      const headers = { 'content-type': 'application/json' };
      const target: Target = { url: server.url, method: 'POST', path: '/v1/auth/cloud/login', headers, body, pids: server.pids };
      const floorTarget: Target = { url: floor.url, method: 'POST', path: '/v1/auth/cloud/login', headers, body, pids: [floor.pid] };
      await warmUp(target);
      await warmUp(floorTarget);
      return await alternating('auth-cloud-login', () => measure(floorTarget, CONCURRENCY), () => measure(target, CONCURRENCY));
    } finally {
      floor.stop();
      await server.stop();
      provider.stop();
    }
  },
};
