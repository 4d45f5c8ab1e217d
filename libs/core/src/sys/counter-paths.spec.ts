import { Backend } from '@svc/framework';
import { MountedBackend, mountStorage, refusal, testMount } from '@svc/testing';
import { counterPaths } from './counter-paths';

/** sys/ served by the counter paths alone, over a token store that holds `accessors`. */
function countersOver(accessors: string[]): MountedBackend {
  const mount = testMount('system', { path: 'sys/' });
  const backend = new Backend({ type: 'system', help: 'Token counts.', paths: counterPaths({ tokens: { allAccessors: async () => [...accessors] } }) });
  return new MountedBackend(backend, mount, mountStorage(mount));
}

describe('sys/internal/counters', () => {
  it('counts the stored service tokens', async () => {
    expect(await countersOver(['accessor-1', 'accessor-2', 'accessor-3']).read('internal/counters/tokens')).toEqual({ counters: { service_tokens: { total: 3 } } });
    expect(await countersOver([]).read('internal/counters/tokens')).toEqual({ counters: { service_tokens: { total: 0 } } });
  });

  it('is a read of the root namespace only', async () => {
    const counters = countersOver([]);
    expect(counters.backend.operationInfo('internal/counters/tokens', 'read')).toMatchObject({ rootNamespace: true, sudo: false, unauthenticated: false });
    expect(await refusal(counters.write('internal/counters/tokens'))).toEqual({ status: 405, message: 'unsupported operation' });
  });

  it('does not serve the counters this server cannot give exactly', async () => {
    const counters = countersOver([]);
    for (const path of ['internal/counters/entities', 'internal/counters/activity']) {
      expect((await refusal(counters.read(path))).status).toBe(404);
    }
  });
});
