import { envelope, envelopeJson, jsonBody, LARGE_BODY_CHARS, type OutgoingEnvelope } from './envelope';

describe('envelopeJson', () => {
  const cases: OutgoingEnvelope[] = [
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
        mfa_requirement: null,
      },
    }),
  ];

  it.each(cases.map((c) => [c.request_id, c]))('writes what JSON.stringify writes (%s)', (_id, value) => {
    expect(envelopeJson(value)).toBe(JSON.stringify(value));
  });

  it('writes a large envelope as the UTF-8 bytes of what JSON.stringify writes, multi-byte text included', () => {
    const items = Array.from({ length: 2_000 }, (_, i) => ({ value: `item ${i}: grüße, 秘密, "quoted" \\ ${'x'.repeat(i % 7)}` }));
    const value = envelope('id-large-é', { data: { items }, warnings: ['ünïcode'] });
    const body = envelopeJson(value);
    expect(Buffer.isBuffer(body)).toBe(true);
    expect(body.toString()).toBe(JSON.stringify(value));
  });
});

describe('envelopeJson with data at the top level', () => {
  it("writes the data's members before the envelope's, leaving envelope names to the envelope", () => {
    const value = envelope('id-1', { data: { 'secret/': { type: 'kv' }, keys: ['a'], request_id: 'from-data', data: 'inner' } });
    const text = envelopeJson(value, true) as string;
    expect(text.startsWith('{"secret/":{"type":"kv"},"keys":["a"],"request_id":"id-1"')).toBe(true);
    expect(JSON.parse(text)).toEqual({ ...JSON.parse(JSON.stringify(value)), 'secret/': { type: 'kv' }, keys: ['a'] });
  });

  it('writes data without such names as its own members, and empty data as none', () => {
    const value = envelope('id-3', { data: { a: 1, b: 'x"y' } });
    const text = envelopeJson(value, true) as string;
    expect(text.startsWith('{"a":1,"b":"x\\"y","request_id":"id-3"')).toBe(true);
    expect(JSON.parse(text)).toEqual({ ...JSON.parse(JSON.stringify(value)), a: 1, b: 'x"y' });
    expect(envelopeJson(envelope('id-4', { data: {} }), true)).toBe(JSON.stringify(envelope('id-4', { data: {} })));
  });

  it('writes an envelope without data unchanged', () => {
    const value = envelope('id-2', { warnings: ['w'] });
    expect(envelopeJson(value, true)).toBe(JSON.stringify(value));
  });
});

describe('jsonBody', () => {
  it('keeps short bodies as text and turns long ones into their UTF-8 bytes', () => {
    expect(jsonBody({ errors: ['nö'] })).toBe('{"errors":["nö"]}');
    const long = { keys: Array.from({ length: LARGE_BODY_CHARS / 4 }, (_, i) => `kéy-${i}`) };
    const body = jsonBody(long);
    expect(Buffer.isBuffer(body)).toBe(true);
    expect(JSON.parse(body.toString())).toEqual(long);
  });
});
