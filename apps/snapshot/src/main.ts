import { runAsMain, runServerCommand } from '@svc/server';

/**
 * The snapshot service (the automated snapshot scheduler) as its own deployable:
 * `node dist/apps/snapshot/src/main.js -config=FILE`, the same as `svc server -config=FILE -service=snapshot`.
 */
runAsMain(runServerCommand([...process.argv.slice(2), '-service=snapshot'], { stdout: process.stdout, stderr: process.stderr }), process.stderr);
