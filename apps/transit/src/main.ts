import { runAsMain, runServerCommand } from '@svc/server';

/**
 * The transit engine as its own deployable: `node dist/apps/transit/src/main.js -config=FILE`, the same
 * as `svc server -config=FILE -service=transit` (the container image and manifests use this entry).
 */
runAsMain(runServerCommand([...process.argv.slice(2), '-service=transit'], { stdout: process.stdout, stderr: process.stderr }), process.stderr);
