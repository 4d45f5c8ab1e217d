import { createView, InmemPhysical, type StorageView } from '@svc/storage';
import { REPLICATION_STORAGE_PREFIX, replicationStateKey } from './replication';
import { StoredReplicationState } from './stored-state';

describe('StoredReplicationState', () => {
  let root: StorageView;
  const setMode = (mode: 'performance' | 'dr', state: string) => root.putJSON(REPLICATION_STORAGE_PREFIX + replicationStateKey(mode), { mode: state });

  beforeEach(async () => {
    root = createView(new InmemPhysical(), '');
    await root.putJSON('core/mounts', [{ path: 'shared/', uuid: 'shared-uuid' }]);
    await root.putJSON('core/local-mounts', [{ path: 'here/', uuid: 'local-uuid' }]);
    await root.putJSON('namespaces/ns1/core/local-mounts', [{ path: 'there/', uuid: 'ns-local-uuid' }]);
  });

  it('writes everything outside a performance secondary, and waits on a DR secondary', async () => {
    const state = new StoredReplicationState(root);
    await state.refresh();
    expect([state.writable('logical/shared-uuid/sync/queue/x'), state.isDrSecondary]).toEqual([true, false]);

    await setMode('dr', 'secondary');
    const dr = new StoredReplicationState(root);
    await dr.refresh();
    expect(dr.isDrSecondary).toBe(true);
  });

  it('on a performance secondary writes the local mounts of every namespace, not the replicated ones', async () => {
    await setMode('performance', 'secondary');
    const state = new StoredReplicationState(root);
    await state.refresh();
    expect(['shared-uuid', 'local-uuid', 'ns-local-uuid'].map((uuid) => state.writable(`logical/${uuid}/sync/queue/x`))).toEqual([false, true, true]);
    // Keys of the cluster's own (tokens, its replication state) stay writable.
    expect([state.writable('sys/token/id/x'), state.writable('core/replication/performance/state')]).toEqual([true, true]);
  });
});
