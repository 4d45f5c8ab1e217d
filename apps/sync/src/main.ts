import { runAsMain, runServerCommand } from '@svc/server';

/**
 * The secret sync worker as its own deployable: `node dist/apps/sync/src/main.js -config=FILE`, the
 * same as `svc server -config=FILE -service=sync` (the container image and manifests use this entry).
 */
runAsMain(runServerCommand([...process.argv.slice(2), '-service=sync'], { stdout: process.stdout, stderr: process.stderr }), process.stderr);
