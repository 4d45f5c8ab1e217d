import { Backend } from '@svc/framework';
import { ServiceError, type Envelope, type OutgoingEnvelope, type WrapInfo } from '@svc/api-contract';
import { engineRequest, MountedBackend, mountStorage, refusal, testMount, unsealedBarrier } from '@svc/testing';
import { Namespace, ROOT_NAMESPACE } from '../namespaces/namespace';
import { wrappingPaths, type WrappingPathsDeps } from './wrapping-paths';

interface Wrapped {
  /** As stored: JSON, whatever form the data had. */
  response: Envelope;
  info: { creation_path: string; creation_time: string; creation_ttl: number };
  namespace: Namespace;
}

type Wrapper = WrappingPathsDeps['wrapping'];

/** Response wrapping in memory: one token per wrapped response, good for one unwrap. */
class MemoryWrapper implements Wrapper {
  readonly wrapped = new Map<string, Wrapped>();
  private issued = 0;

  async wrap(response: OutgoingEnvelope, ttl: number, namespace: Namespace, creationPath: string): Promise<WrapInfo> {
    const token = `wrapping-${++this.issued}`;
    const info = { creation_path: creationPath, creation_time: '2024-01-02T03:04:05.000Z', creation_ttl: ttl };
    this.wrapped.set(token, { response: JSON.parse(JSON.stringify(response)) as Envelope, info, namespace });
    return { token, accessor: `accessor-of-${token}`, ttl, creation_time: info.creation_time, creation_path: creationPath };
  }

  async unwrap(token: string): Promise<Envelope> {
    const { response } = this.opened(token);
    this.wrapped.delete(token);
    return response;
  }

  async lookup(token: string): Promise<Wrapped['info']> {
    return this.opened(token).info;
  }

  async rewrap(token: string): Promise<WrapInfo> {
    const { info, namespace } = this.opened(token);
    const response = await this.unwrap(token);
    return this.wrap(response, info.creation_ttl, namespace, info.creation_path);
  }

  private opened(token: string): Wrapped {
    const found = this.wrapped.get(token);
    if (!found) throw ServiceError.badRequest('wrapping token is not valid or does not exist');
    return found;
  }
}

const barrier = unsealedBarrier();
const root = new Namespace(ROOT_NAMESPACE, barrier);
const team = new Namespace({ id: 'team-id', path: 'team/', custom_metadata: {} }, barrier);

describe('sys/wrapping', () => {
  let sys: MountedBackend;
  let wrapper: MemoryWrapper;
  let requests: number;

  beforeEach(() => {
    wrapper = new MemoryWrapper();
    requests = 0;
    const deps: WrappingPathsDeps = { wrapping: wrapper, router: { namespaceOf: ({ mount }) => (mount.namespace === team.path ? team : root) } };
    const mount = testMount('system', { path: 'sys/' });
    sys = new MountedBackend(new Backend({ type: 'system', help: 'Wrapping.', paths: wrappingPaths(deps) }), mount, mountStorage(mount));
  });

  /** An update (request-1, request-2, ...) as a caller holding `tokenId` sends it, in `namespace`. */
  const update = (path: string, data: Record<string, unknown>, options: { tokenId?: string; namespace?: Namespace; wrapTtl?: number } = {}) =>
    sys.backend.handle({
      ...engineRequest({ ...sys.mount, namespace: (options.namespace ?? root).path }, 'update', path, data),
      requestId: `request-${++requests}`,
      wrapTtl: options.wrapTtl,
      ...(options.tokenId ? { caller: { tokenAccessor: 'caller-accessor', tokenId: options.tokenId, policies: ['default'], entityId: '', displayName: 'token', namespace: '', meta: {} } } : {}),
    });

  it('wraps the request data for five minutes, or the TTL the wrap header asks, in the namespace of the request', async () => {
    const wrapped = await update('wrapping/wrap', { password: 's3cret', nested: { a: 1 } });
    expect(wrapped?.raw).toEqual({
      request_id: 'request-1',
      lease_id: '',
      renewable: false,
      lease_duration: 0,
      data: null,
      wrap_info: { token: 'wrapping-1', accessor: 'accessor-of-wrapping-1', ttl: 300, creation_time: '2024-01-02T03:04:05.000Z', creation_path: 'sys/wrapping/wrap' },
      warnings: null,
      auth: null,
    });
    expect(wrapper.wrapped.get('wrapping-1')).toMatchObject({ response: { data: { password: 's3cret', nested: { a: 1 } } }, namespace: root });

    const inTeam = await update('wrapping/wrap', { k: 'v' }, { namespace: team, wrapTtl: 5400 });
    expect(inTeam?.raw).toMatchObject({ wrap_info: { token: 'wrapping-2', ttl: 5400 } });
    expect(wrapper.wrapped.get('wrapping-2')).toMatchObject({ info: { creation_ttl: 5400 }, namespace: team });
  });

  it('unwraps once, the token given in the body or the calling token', async () => {
    await update('wrapping/wrap', { password: 's3cret' });
    const unwrapped = await update('wrapping/unwrap', { token: 'wrapping-1' });
    // The wrapped envelope as it was, under this request's id.
    expect(unwrapped?.raw).toMatchObject({ request_id: 'request-2', data: { password: 's3cret' }, wrap_info: null, auth: null });
    expect(await refusal(update('wrapping/unwrap', { token: 'wrapping-1' }))).toEqual({ status: 400, message: 'wrapping token is not valid or does not exist' });

    await update('wrapping/wrap', { other: true });
    expect((await update('wrapping/unwrap', {}, { tokenId: 'wrapping-2' }))?.raw).toMatchObject({ data: { other: true } });
  });

  it('looks up a wrapping token without unwrapping it', async () => {
    await update('wrapping/wrap', { k: 'v' }, { wrapTtl: 60 });
    const expected = { creation_path: 'sys/wrapping/wrap', creation_time: '2024-01-02T03:04:05.000Z', creation_ttl: 60 };
    expect((await update('wrapping/lookup', { token: 'wrapping-1' }))?.data).toEqual(expected);
    expect((await update('wrapping/lookup', {}, { tokenId: 'wrapping-1' }))?.data).toEqual(expected);
    expect(wrapper.wrapped.has('wrapping-1')).toBe(true);
  });

  it('rewraps into a new token; the old one stops working', async () => {
    await update('wrapping/wrap', { k: 'v' }, { namespace: team });
    const rewrapped = await update('wrapping/rewrap', { token: 'wrapping-1' });
    expect(rewrapped?.raw).toMatchObject({ data: null, wrap_info: { token: 'wrapping-2', ttl: 300, creation_path: 'sys/wrapping/wrap' } });
    expect(wrapper.wrapped.get('wrapping-2')).toMatchObject({ response: { data: { k: 'v' } }, namespace: team });
    expect(await refusal(update('wrapping/lookup', { token: 'wrapping-1' }))).toEqual({ status: 400, message: 'wrapping token is not valid or does not exist' });
  });

  it('refuses unwrap, lookup and rewrap without a token, or with one that wraps nothing', async () => {
    for (const operation of ['unwrap', 'lookup', 'rewrap']) {
      expect(await refusal(update(`wrapping/${operation}`, {}))).toEqual({ status: 400, message: 'a wrapping token is required' });
      expect(await refusal(update(`wrapping/${operation}`, { token: 'unknown' }))).toEqual({ status: 400, message: 'wrapping token is not valid or does not exist' });
    }
  });
});
