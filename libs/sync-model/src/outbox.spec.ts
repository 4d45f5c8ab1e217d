import { mountStorage, testMount } from '@svc/testing';
import { currentStatus, dueDestinations, markAssociated, queueFirstSync, queueKey, queueRemoval, readEntry, recordSecretChange, writeEntry } from './outbox';

describe('sync outbox of a KV mount', () => {
  const storage = () => mountStorage(testMount('kv'));
  const change = (view: ReturnType<typeof storage>, path: string, data: Record<string, unknown> | null) => view.transaction((tx) => recordSecretChange(tx, path, async () => data));
  const entry = (view: ReturnType<typeof storage>, path: string) => readEntry(view, queueKey(path));

  it('queues nothing for a secret that is not associated', async () => {
    const view = storage();
    await change(view, 'app', { v: 1 });
    expect(await entry(view, 'app')).toBeNull();
  });

  it('keeps one entry per secret: the latest change replaces the data and the change id, for every associated destination', async () => {
    const view = storage();
    await view.transaction((tx) => markAssociated(tx, 'app', 'cloud-sm/a'));
    await view.transaction((tx) => markAssociated(tx, 'app', 'codehost/b'));
    await change(view, 'app', { v: 1 });
    const first = await entry(view, 'app');
    await change(view, 'app', { v: 2 });
    const second = await entry(view, 'app');
    expect(second).toMatchObject({ path: 'app', data: { v: 2 }, targets: ['cloud-sm/a', 'codehost/b'], removals: [], enqueued_at: first?.enqueued_at });
    expect(second?.change).not.toBe(first?.change);
  });

  it('a first sync keeps newer data already queued; a removal stops changes going to the destination and queues its deletion', async () => {
    const view = storage();
    await view.transaction((tx) => markAssociated(tx, 'app', 'cloud-sm/a'));
    await change(view, 'app', { v: 'newer' });
    await view.transaction((tx) => queueFirstSync(tx, 'app', 'cloud-sm/a', { v: 'read before' }));
    expect((await entry(view, 'app'))?.data).toEqual({ v: 'newer' });

    await view.transaction((tx) => queueRemoval(tx, 'app', 'cloud-sm/a'));
    await change(view, 'app', { v: 'after removal' });
    // Pending removals keep the entry current, but nothing targets the destination any more.
    expect(await entry(view, 'app')).toMatchObject({ data: { v: 'after removal' }, targets: [], removals: ['cloud-sm/a'] });
  });

  it('a destination in backoff is not due; later changes keep its backoff, set and remove clear it', async () => {
    const view = storage();
    await view.transaction((tx) => markAssociated(tx, 'app', 'cloud-sm/a'));
    await view.transaction((tx) => markAssociated(tx, 'app', 'codehost/b'));
    await change(view, 'app', { v: 1 });
    const queued = await entry(view, 'app');
    if (!queued) throw new Error('nothing queued');
    await view.transaction((tx) => writeEntry(tx, { ...queued, backoff: { 'cloud-sm/a': { attempts: 2, not_before: Date.now() + 60_000 } } }));
    await change(view, 'app', { v: 2 });
    const changed = await entry(view, 'app');
    expect(changed && dueDestinations(changed, Date.now())).toEqual(['codehost/b']);
    expect(changed && dueDestinations(changed, Date.now() + 61_000)).toEqual(['cloud-sm/a', 'codehost/b']);

    await view.transaction((tx) => queueFirstSync(tx, 'app', 'cloud-sm/a', { v: 2 }));
    const retried = await entry(view, 'app');
    expect(retried && dueDestinations(retried, Date.now())).toEqual(['cloud-sm/a', 'codehost/b']);
  });

  it('an association reads SYNCED (or UNSYNCED) only while no newer change is queued for its destination', async () => {
    const view = storage();
    await view.transaction((tx) => markAssociated(tx, 'app', 'cloud-sm/a'));
    await change(view, 'app', { v: 1 });
    const queued = await entry(view, 'app');
    expect(['SYNCED', 'UNSYNCED', 'SYNCING', 'EXTERNAL_SERVICE_ERROR'].map((recorded) => currentStatus(recorded as 'SYNCED', queued, 'cloud-sm/a'))).toEqual(['PENDING', 'PENDING', 'SYNCING', 'EXTERNAL_SERVICE_ERROR']);
    expect(currentStatus('SYNCED', queued, 'codehost/b')).toBe('SYNCED');
    expect(currentStatus('SYNCED', null, 'cloud-sm/a')).toBe('SYNCED');
  });
});
