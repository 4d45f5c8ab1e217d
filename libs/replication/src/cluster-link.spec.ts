import { X509Certificate } from 'node:crypto';
import { readWrappingClaims, signWrappingToken, verifyWrappingToken } from './activation';
import { ClusterClient, ClusterListener, clusterServerName, type LinkHandler } from './cluster-link';
import { ClusterCa } from './pki';

describe('cluster link', () => {
  let ca: ClusterCa;
  let otherCa: ClusterCa;
  beforeAll(async () => {
    [ca, otherCa] = await Promise.all([ClusterCa.create('one'), ClusterCa.create('two')]);
  });

  it('serves secondaries holding a certificate of its CA, and refuses a revoked or foreign one', async () => {
    const server = await ca.serverCertificate(clusterServerName('performance'));
    const good = await ca.clientCertificate('sec-1');
    const revoked = await ca.clientCertificate('sec-2');
    const foreign = await otherCa.clientCertificate('sec-1');
    const accepted = new Set([new X509Certificate(good.cert).serialNumber.toLowerCase(), new X509Certificate(revoked.cert).serialNumber.toLowerCase()]);
    const refusals: string[] = [];
    const handler: LinkHandler = {
      credentials: (mode) => (mode === 'performance' ? { server, caCert: ca.ca.cert } : undefined),
      accepts: (_mode, _id, serial) => accepted.has(serial),
      handle: async (request) => ({ who: request.secondaryId, path: request.path, echo: request.body.n }),
      onRefused: (_mode, id) => refusals.push(id),
    };
    const listener = new ClusterListener(handler);
    await listener.listen('127.0.0.1:0');
    const clients: ClusterClient[] = [];
    const client = (mode: 'performance' | 'dr', cert: { cert: string; key: string }, trust = ca.ca.cert) => {
      const made = new ClusterClient(mode, trust, cert);
      clients.push(made);
      return made;
    };
    try {
      expect(await client('performance', good).call(listener.address, '/v1/x', { n: 1 })).toEqual({ who: 'sec-1', path: '/v1/x', echo: 1 });

      const second = client('performance', revoked);
      expect(await second.call(listener.address, '/v1/x', {})).toMatchObject({ who: 'sec-2' });
      accepted.delete(new X509Certificate(revoked.cert).serialNumber.toLowerCase());
      listener.disconnect('performance', 'sec-2');
      await expect(second.call(listener.address, '/v1/x', {})).rejects.toThrow();
      expect(refusals).toContain('sec-2');

      await expect(client('performance', foreign).call(listener.address, '/v1/x', {})).rejects.toThrow();
      // No DR primary here: a DR secondary's handshake finds no certificate to talk to.
      await expect(client('dr', good).call(listener.address, '/v1/x', {})).rejects.toThrow();
      // A secondary checks the primary's certificate against the CA of its bundle.
      await expect(client('performance', good, otherCa.ca.cert).call(listener.address, '/v1/x', {})).rejects.toThrow();
    } finally {
      clients.forEach((made) => made.close());
      await listener.close();
    }
  });

  it('signs activation tokens that only the same CA verifies, until they expire', () => {
    const now = Math.floor(Date.now() / 1000);
    const claims = { addr: 'https://primary:8200', accessor: 'acc', jti: 'svs.wrapped', type: 'wrapping' as const, iat: now, nbf: now, exp: now + 60 };
    const token = signWrappingToken(ca, 'performance', claims);
    expect(readWrappingClaims(token)).toEqual(claims);
    expect(verifyWrappingToken(ca, token, now)).toBe('svs.wrapped');
    expect(verifyWrappingToken(otherCa, token, now)).toBeUndefined();
    expect(verifyWrappingToken(ca, token, now + 61)).toBeUndefined();
    expect(() => readWrappingClaims('a.b.c')).toThrow(/not an activation token/);
  });
});
