/**
 * The HTTP edge under faults and bad input (issue 11): slow and malformed requests, large values,
 * deep JSON, control characters in names and ids, and how a 500 is logged, in both topologies.
 */
import { Agent, request } from 'node:http';
import { api, initAndUnseal, startTopology, type Topology, type TopologyKind } from '@svc/testing';

interface Answer {
  status: number;
  text: string;
}

/** One request, resolved with its answer once the whole body has arrived. */
function send(url: string, method: string, path: string, options: { token?: string; body?: Buffer; agent?: Agent; onSent?: () => void } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = {};
    if (options.token) headers['x-service-token'] = options.token;
    if (options.body) headers['content-length'] = options.body.length;
    const req = request(new URL(path, url), { method, headers, agent: options.agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    if (options.onSent) req.on('finish', options.onSent);
    req.end(options.body);
  });
}

describe.each<TopologyKind>(['all-in-one', 'distributed'])('the HTTP edge, %s', (kind) => {
  let topology: Topology;
  let url: string;
  let rootToken: string;

  beforeAll(async () => {
    topology = await startTopology(kind);
    url = topology.urls[0];
    ({ rootToken } = await initAndUnseal(url));
  }, 120_000);

  afterAll(() => topology?.stop());

  test('a 31 MiB write does not hold up other requests: health answers before the write completes', async () => {
    const value = 'x'.repeat(1024 * 1024 - 16);
    const data = Object.fromEntries(Array.from({ length: 31 }, (_, i) => [`part${i}`, value]));
    const body = Buffer.from(JSON.stringify(data));
    // A connection opened beforehand, as a monitoring client keeps one.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      expect((await send(url, 'GET', '/v1/sys/health', { agent })).status).toBe(200);
      const order: string[] = [];
      let health: Promise<void> | undefined;
      const write = send(url, 'PUT', '/v1/secret/large', {
        token: rootToken,
        body,
        // Once the whole body is on its way, the server's work on it is what health competes with.
        onSent: () => {
          health = send(url, 'GET', '/v1/sys/health', { agent }).then((answer) => {
            expect(answer.status).toBe(200);
            order.push('health');
          });
        },
      }).then((answer) => {
        expect(answer.status).toBe(204);
        order.push('write');
      });
      await write;
      await health;
      expect(order).toEqual(['health', 'write']);
      const read = await api<{ data: Record<string, string> }>(url, 'GET', '/v1/secret/large', { token: rootToken });
      expect(read.body.data.part30).toBe(value);
    } finally {
      agent.destroy();
    }
  }, 120_000);
});
