/**
 * The transit engine through the gateway, in both topologies (distributed: transit is its own
 * process on NATS), and what a user sees when the service is gone.
 */
import { createDecipheriv } from 'node:crypto';
import { api, initAndUnseal, startTopology, type Topology, type TopologyKind } from '@svc/testing';

describe.each<TopologyKind>(['all-in-one', 'distributed'])('transit, %s', (kind) => {
  let topology: Topology;
  let url: string;
  let token: string;

  beforeAll(async () => {
    topology = await startTopology(kind, { services: ['transit'] });
    url = topology.urls[0];
    ({ rootToken: token } = await initAndUnseal(url));
    expect((await api(url, 'POST', '/v1/sys/mounts/transit', { token, body: { type: 'transit' } })).status).toBe(204);
  }, 120_000);

  afterAll(() => topology?.stop());

  test('encrypt and decrypt round trip; the ciphertext opens with standard AES-GCM and the exported key', async () => {
    expect((await api(url, 'POST', '/v1/transit/keys/app', { token, body: { exportable: true } })).status).toBe(200);
    const plaintext = Buffer.from('attack at dawn').toString('base64');
    const enc = await api<{ data: { ciphertext: string } }>(url, 'POST', '/v1/transit/encrypt/app', { token, body: { plaintext } });
    expect(enc.status).toBe(200);
    expect(enc.body.data.ciphertext).toMatch(/^svc:v1:/);
    const dec = await api<{ data: { plaintext: string } }>(url, 'POST', '/v1/transit/decrypt/app', { token, body: { ciphertext: enc.body.data.ciphertext } });
    expect(dec.body.data.plaintext).toBe(plaintext);

    const exported = await api<{ data: { keys: Record<string, string> } }>(url, 'GET', '/v1/transit/export/encryption-key/app/1', { token });
    const key = Buffer.from(exported.body.data.keys['1'], 'base64');
    const blob = Buffer.from(enc.body.data.ciphertext.split(':')[2], 'base64');
    const decipher = createDecipheriv('aes-256-gcm', key, blob.subarray(0, 12));
    decipher.setAuthTag(blob.subarray(blob.length - 16));
    expect(Buffer.concat([decipher.update(blob.subarray(12, blob.length - 16)), decipher.final()]).toString()).toBe('attack at dawn');
  });

  test('bad input is a 4xx naming the problem, without echoing the plaintext', async () => {
    const bad = await api(url, 'POST', '/v1/transit/encrypt/app', { token, body: { plaintext: 'not base64 at all!' } });
    expect(bad.status).toBe(400);
    expect(bad.text).not.toContain('not base64 at all!');
    const tampered = await api(url, 'POST', '/v1/transit/decrypt/app', { token, body: { ciphertext: 'svc:v1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' } });
    expect(tampered.status).toBe(400);
  });

  if (kind === 'distributed') {
    test('with the transit service gone, transit paths answer 503 naming the service at once', async () => {
      await topology.stopProcess('transit');
      const started = Date.now();
      const res = await api(url, 'POST', '/v1/transit/encrypt/app', { token, body: { plaintext: 'AAAA' } });
      expect(res.status).toBe(503);
      expect(res.body.errors[0]).toMatch(/transit/);
      expect(Date.now() - started).toBeLessThan(2_000);
      expect((await api(url, 'GET', '/v1/sys/mounts', { token })).status).toBe(200);
    });
  }
});
