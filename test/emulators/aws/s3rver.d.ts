/** The part of s3rver 3 (an S3 server over a directory) the S3 emulator uses. */
declare module 's3rver' {
  import type { Server } from 'node:http';

  interface S3rverOptions {
    address?: string;
    port?: number;
    silent?: boolean;
    directory?: string;
    resetOnClose?: boolean;
    vhostBuckets?: boolean;
    configureBuckets?: { name: string }[];
  }

  export default class S3rver {
    constructor(options: S3rverOptions);
    httpServer: Server;
    run(): Promise<{ address: string; port: number }>;
    close(): Promise<void>;
  }
}
