import { NodeFS } from '@electric-sql/pglite/nodefs';

/** Permission bits kept for files and directories of a data directory: the owner's only. */
const OWNER_BITS_AND_TYPE = ~0o077;

interface ModeOps {
  mknod?: (parent: unknown, name: string, mode: number, dev: number) => unknown;
  setattr?: (target: unknown, attr: { mode?: number }) => void;
}

/**
 * PGlite's Node filesystem, keeping the data directory private. PostgreSQL compiled to WebAssembly
 * runs without a umask, so its filesystem layer creates files and then chmods them to 0666; here
 * every mode it sets is narrowed to the owner's bits before it reaches the disk.
 */
export class PrivateNodeFS extends NodeFS {
  override async init(...args: Parameters<NodeFS['init']>): ReturnType<NodeFS['init']> {
    const { emscriptenOpts } = await super.init(...args);
    const narrow = (mod: { NODEFS: unknown }) => {
      const nodefs = mod.NODEFS as { node_ops: ModeOps; stream_ops: ModeOps };
      narrowModes(nodefs.node_ops);
      narrowModes(nodefs.stream_ops);
    };
    return { emscriptenOpts: { ...emscriptenOpts, preRun: [narrow, ...(emscriptenOpts.preRun ?? [])] } };
  }
}

function narrowModes(ops: ModeOps): void {
  const { mknod, setattr } = ops;
  if (mknod) ops.mknod = (parent, name, mode, dev) => mknod(parent, name, mode & OWNER_BITS_AND_TYPE, dev);
  if (setattr) {
    ops.setattr = (target, attr) =>
      setattr(target, attr.mode === undefined ? attr : { ...attr, mode: attr.mode & OWNER_BITS_AND_TYPE });
  }
}
