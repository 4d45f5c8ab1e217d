import { envelope, envelopeJson, type Envelope } from './envelope';

describe('envelopeJson', () => {
  const cases: Envelope[] = [
    envelope('id-1', {}),
    envelope('id-"quoted"\n', { data: { a: 1, nested: { b: [1, 'x', null] }, gone: undefined }, warnings: ['careful "here"'] }),
    envelope('id-3', { lease_id: 'database/creds/r/abc', lease_duration: 3600, renewable: true, data: { username: 'u', password: 'p' } }),
    envelope('id-4', {
      wrap_info: { token: 't', accessor: 'a', ttl: 60, creation_time: '2026-01-01T00:00:00Z', creation_path: 'sys/wrapping/wrap' },
      mount_type: 'kv',
    }),
    envelope('id-5', {
      auth: {
        client_token: 'c',
        accessor: 'a',
        policies: ['default'],
        token_policies: ['default'],
        metadata: null,
        lease_duration: 0,
        renewable: false,
        entity_id: '',
        token_type: 'service',
        orphan: true,
        num_uses: 0,
      },
    }),
  ];

  it.each(cases.map((c) => [c.request_id, c]))('writes what JSON.stringify writes (%s)', (_id, value) => {
    expect(envelopeJson(value)).toBe(JSON.stringify(value));
  });
});
