import { createReadStream } from 'node:fs';
import { println, type Command } from '../../context';
import { snapshotFile } from './snapshot-file';

export const command: Command = {
  args: 'FILE',
  summary: "Restore the storage from a snapshot FILE; -force restores another installation's (the service then seals: unseal with its keys).",
  flags: { force: { kind: 'boolean', description: 'restore a snapshot of another installation (sys/storage/raft/snapshot-force)' } },
  async run(ctx, { flags, positionals }) {
    const file = snapshotFile(positionals, 'operator raft snapshot restore');
    await ctx.client.upload(flags.force ? 'sys/storage/raft/snapshot-force' : 'sys/storage/raft/snapshot', createReadStream(file), 'application/gzip');
    println(ctx.io.stdout, flags.force ? "Success! Snapshot restored; the service is sealed until unsealed with that snapshot's keys." : 'Success! Snapshot restored.');
    return 0;
  },
};
