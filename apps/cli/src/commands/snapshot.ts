import { createReadStream, createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { UsageError } from './args';
import { println, type Command } from './context';

function fileArgument(positionals: string[], command: string): string {
  if (positionals.length !== 1) throw new UsageError(`${command} takes exactly one argument, the snapshot file`);
  return positionals[0];
}

export const operatorRaftSnapshotSaveCommand: Command = {
  name: 'operator raft snapshot save',
  args: 'FILE',
  summary: 'Save a snapshot of the whole storage to FILE (sys/storage/raft/snapshot; needs sudo).',
  flags: {},
  async run(ctx, { positionals }) {
    const file = fileArgument(positionals, 'operator raft snapshot save');
    const body = await ctx.client.download('sys/storage/raft/snapshot');
    // Written beside FILE, then renamed: FILE is never a partial snapshot.
    const partial = `${file}.partial`;
    try {
      await pipeline(Readable.fromWeb(body as WebReadableStream<Uint8Array>), createWriteStream(partial, { mode: 0o600 }));
      await rename(partial, file);
    } catch (error) {
      await rm(partial, { force: true });
      throw error;
    }
    println(ctx.io.stdout, `Success! Snapshot saved to ${file}.`);
    return 0;
  },
};

export const operatorRaftSnapshotRestoreCommand: Command = {
  name: 'operator raft snapshot restore',
  args: 'FILE',
  summary: 'Restore the storage from a snapshot FILE; -force restores another installation\'s (the service then seals: unseal with its keys).',
  flags: { force: { kind: 'boolean', description: 'restore a snapshot of another installation (sys/storage/raft/snapshot-force)' } },
  async run(ctx, { flags, positionals }) {
    const file = fileArgument(positionals, 'operator raft snapshot restore');
    await ctx.client.upload(flags.force ? 'sys/storage/raft/snapshot-force' : 'sys/storage/raft/snapshot', createReadStream(file), 'application/gzip');
    println(ctx.io.stdout, flags.force ? 'Success! Snapshot restored; the service is sealed until unsealed with that snapshot\'s keys.' : 'Success! Snapshot restored.');
    return 0;
  },
};
