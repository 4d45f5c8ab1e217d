import { runAsMain, runServerCommand } from '@svc/server';

/**
 * The cloud auth method as its own deployable: `node dist/apps/auth-cloud/src/main.js -config=FILE`, the
 * same as `svc server -config=FILE -service=auth-cloud` (the container image and manifests use this entry).
 */
runAsMain(runServerCommand([...process.argv.slice(2), '-service=auth-cloud'], { stdout: process.stdout, stderr: process.stderr }), process.stderr);
