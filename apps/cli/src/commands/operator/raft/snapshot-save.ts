import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { println, type Command } from '../../context';
import { snapshotFile } from './snapshot-file';

export const command: Command = {
  args: 'FILE',
  summary: 'Save a snapshot of the whole storage to FILE (sys/storage/raft/snapshot; needs sudo).',
  flags: {},
  async run(ctx, { positionals }) {
    const file = snapshotFile(positionals, 'operator raft snapshot save');
    const body = await ctx.client.download('sys/storage/raft/snapshot');
    // Written beside FILE, then renamed: FILE is never a partial snapshot.
    const partial = `${file}.partial`;
    try {
      await pipeline(body, createWriteStream(partial, { mode: 0o600 }));
      await rename(partial, file);
    } catch (error) {
      await rm(partial, { force: true });
      throw error;
    }
    println(ctx.io.stdout, `Success! Snapshot saved to ${file}.`);
    return 0;
  },
};
