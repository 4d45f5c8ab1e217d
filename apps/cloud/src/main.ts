import { runAsMain, runServerCommand } from '@svc/server';

/**
 * The cloud-credential engine as its own deployable: `node dist/apps/cloud/src/main.js -config=FILE`, the
 * same as `svc server -config=FILE -service=cloud` (the container image and manifests use this entry).
 */
runAsMain(runServerCommand([...process.argv.slice(2), '-service=cloud'], { stdout: process.stdout, stderr: process.stderr }), process.stderr);
