import { runAsMain, runServerCommand } from '@svc/server';

/**
 * The replication service as its own deployable: `node dist/apps/replication/src/main.js -config=FILE`,
 * the same as `svc server -config=FILE -service=replication` (the container image and manifests use this entry).
 */
runAsMain(runServerCommand([...process.argv.slice(2), '-service=replication'], { stdout: process.stdout, stderr: process.stderr }), process.stderr);
