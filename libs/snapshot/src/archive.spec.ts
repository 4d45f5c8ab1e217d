import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { InmemPhysical, Keyring, type StoredEntry } from '@svc/storage';
import { createSnapshot, openSnapshot } from './archive';

async function all(entries: AsyncIterable<StoredEntry>): Promise<Record<string, string>> {
  const seen: Record<string, string> = {};
  for await (const { key, value } of entries) seen[key] = value.toString('hex');
  return seen;
}

describe('snapshot archive', () => {
  const keyring = Keyring.generate();
  let store: InmemPhysical;

  beforeEach(async () => {
    store = new InmemPhysical();
    await store.put('core/keyring', Buffer.from([1, 2, 3]));
    await store.put('logical/abc/big', Buffer.alloc(200_000, 7));
    await store.put('sys/token/id/x', Buffer.alloc(0));
  });

  it('round-trips every entry and recognises its own installation', async () => {
    const file = await createSnapshot(store, keyring);
    try {
      expect(file.meta).toMatchObject({ version: 1, entries: 3, storage_type: 'inmem' });
      const opened = await openSnapshot(createReadStream(file.path), keyring.rotate());
      expect(opened.sameInstallation).toBe(true);
      expect(await all(opened.entries())).toEqual(await store.scan(all));
      await opened.dispose();
    } finally {
      await file.dispose();
    }
  });

  it('tells another installation\'s snapshot apart, and refuses what is not a snapshot with a 400', async () => {
    const file = await createSnapshot(store, keyring);
    try {
      const opened = await openSnapshot(createReadStream(file.path), Keyring.generate());
      expect(opened.sameInstallation).toBe(false);
      await opened.dispose();
    } finally {
      await file.dispose();
    }
    await expect(openSnapshot(Readable.from([Buffer.from('plain text')]), keyring)).rejects.toMatchObject({
      kind: 'bad-request',
      errors: ['invalid snapshot: the body is not a gzip-compressed tar archive of a snapshot, or it is truncated'],
    });
  });
});
