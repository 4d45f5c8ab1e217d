import { runAsMain, runServerCommand } from '@svc/server';

/**
 * The gateway as its own deployable: `node dist/apps/gateway/src/main.js -config=FILE`, the same as
 * `svc server -config=FILE -service=gateway` (the container image and manifests use this entry).
 */
runAsMain(runServerCommand([...process.argv.slice(2), '-service=gateway'], { stdout: process.stdout, stderr: process.stderr }), process.stderr);
