import { alternating, measure, setUp, startDevServer, startFloor, warmUp, type Target } from '../run';
import type { Scenario } from './scenario';

/**
 * Cloud credential issuance through the all-in-one dev server, beside a bare node:http endpoint
 * making the same provider calls with the raw SDK (cloud-creds floor). Both call one IAM + STS
 * emulator running in its own process (iam-sts-emulator), which checks every signature:
 * `creds` creates an IAM user with one managed policy and an access key (five provider calls for
 * the engine with its write-ahead record, three for the floor), `sts` assumes a role (one call each).
 * Floor and target are measured in alternating rounds (the machine is shared and its speed drifts).
 * The emulator is discarded afterwards with every user made.
 */
const CONCURRENCY = 8;

function issuance(name: string, path: string): Scenario {
  return {
    name,
    async run() {
      const provider = await startFloor('iam-sts-emulator');
      const { accessKeyId, secretAccessKey, roleArn, policyArn } = provider.info as Record<string, string>;
      const server = await startDevServer();
      const floor = await startFloor('cloud-creds', {
        FLOOR_PROVIDER_URL: provider.url,
        FLOOR_ACCESS_KEY: accessKeyId,
        FLOOR_SECRET_KEY: secretAccessKey,
        FLOOR_ROLE_ARN: roleArn,
        FLOOR_POLICY_ARN: policyArn,
      });
      try {
        await setUp(server.url, server.token, '/v1/sys/mounts/cloud', { type: 'cloud' });
        await setUp(server.url, server.token, '/v1/cloud/config/root', { access_key: accessKeyId, secret_key: secretAccessKey, iam_endpoint: provider.url, sts_endpoint: provider.url });
        await setUp(server.url, server.token, '/v1/cloud/roles/bench', { credential_type: 'iam_user', policy_arns: [policyArn] });
        await setUp(server.url, server.token, '/v1/cloud/roles/assume', { credential_type: 'assumed_role', role_arns: [roleArn] });
        const headers = { 'x-service-token': server.token };
        const target: Target = { url: server.url, method: 'GET', path, headers, pids: server.pids };
        const floorTarget: Target = { url: floor.url, method: 'GET', path, headers, pids: [floor.pid] };
        await warmUp(target);
        await warmUp(floorTarget);
        return await alternating(name, () => measure(floorTarget, CONCURRENCY), () => measure(target, CONCURRENCY));
      } finally {
        floor.stop();
        await server.stop();
        provider.stop();
      }
    },
  };
}

export const cloudScenarios: Scenario[] = [issuance('cloud-creds', '/v1/cloud/creds/bench'), issuance('cloud-sts', '/v1/cloud/sts/assume')];
