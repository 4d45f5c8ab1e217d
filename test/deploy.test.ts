/**
 * The deployment files run the same commands the tests run: every service app has a
 * `svc server -config=... -service=NAME` entry in docker-compose and in the Kubernetes manifests,
 * and the configurations they mount parse with the server's own parser.
 */
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseAllDocuments, parse } from 'yaml';
import { parseConfig } from '@svc/config';

const root = path.resolve(__dirname, '..');
const serviceApps = readdirSync(path.join(root, 'apps')).filter((app) => app !== 'cli');

function services(args: string[]): string | undefined {
  expect(args[0]).toBe('server');
  expect(args.some((a) => /^-config=\/etc\/svc\/\w+\.hcl$/.test(a))).toBe(true);
  return args.find((a) => a.startsWith('-service='))?.slice('-service='.length);
}

describe('deployment files', () => {
  test('docker-compose runs two gateways and every service app with svc server -service', () => {
    const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
      services: Record<string, { image?: string; command?: string[] }>;
    };
    const ours = Object.values(compose.services).filter((s) => s.image?.startsWith('secrets-service'));
    const started = ours.map((s) => services(s.command ?? []));
    expect(started.filter((s) => s === 'gateway')).toHaveLength(2);
    expect([...new Set(started)].sort()).toEqual(serviceApps.sort());
  });

  test('the Kubernetes manifests deploy every service app with the same commands', () => {
    const dir = path.join(root, 'deploy', 'k8s');
    const deployed = readdirSync(dir)
      .flatMap((file) => parseAllDocuments(readFileSync(path.join(dir, file), 'utf8')).map((d) => d.toJS()))
      .filter((doc) => doc?.kind === 'Deployment')
      .map((doc) => services(doc.spec.template.spec.containers[0].args));
    expect(deployed.sort()).toEqual(serviceApps.sort());
  });

  test('the mounted configurations parse with the server\'s parser', async () => {
    for (const file of ['gateway.hcl', 'service.hcl']) {
      const config = await parseConfig(readFileSync(path.join(root, 'deploy', 'config', file), 'utf8'), 'hcl', file);
      expect(config.storage.type).toBe('postgresql');
      expect(config.bus?.type).toBe('nats');
    }
    const configMap = parseAllDocuments(readFileSync(path.join(root, 'deploy', 'k8s', 'config.yaml'), 'utf8'))[0].toJS() as { data: Record<string, string> };
    for (const [name, text] of Object.entries(configMap.data)) expect((await parseConfig(text, 'hcl', name)).storage.type).toBe('postgresql');
  });
});
