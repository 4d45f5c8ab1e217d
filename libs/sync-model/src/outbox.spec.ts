import { mountStorage, testMount } from '@svc/testing';
import { markAssociated, queueFirstSync, queueKey, queueRemoval, readEntry, recordSecretChange } from './outbox';

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
});
