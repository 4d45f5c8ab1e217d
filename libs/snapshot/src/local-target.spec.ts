import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { temporaryDirectoryPerTest } from '@svc/testing';
import type { SnapshotFile } from './archive';
import { checkConfig } from './config';
import { createTarget } from './targets';

describe('local snapshot target', () => {
  const directory = temporaryDirectoryPerTest('svc-local-target-');

  it('removes the partial copy an interrupted run of its configuration left, and nothing else', async () => {
    const dir = directory();
    const target = await createTarget(checkConfig({ interval: 60, path_prefix: dir, storage_type: 'local', local_max_space: 1_000_000, file_prefix: 'app' }));
    const archive = join(dir, 'source');
    writeFileSync(archive, 'archive bytes');
    for (const name of ['.app-1000.snap.partial', '.other-1000.snap.partial', 'app-notes.txt']) writeFileSync(join(dir, name), 'left');
    const file: SnapshotFile = { path: archive, size: 13, meta: {} as SnapshotFile['meta'], dispose: async () => undefined };

    await target.write('app-2000.snap', file);

    expect(readdirSync(dir).sort()).toEqual(['.other-1000.snap.partial', 'app-2000.snap', 'app-notes.txt', 'source']);
    expect(readFileSync(join(dir, 'app-2000.snap'), 'utf8')).toBe('archive bytes');
  });
});
