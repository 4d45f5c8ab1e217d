import { runAsMain, runServerCommand } from '@svc/server';

/**
 * The database engine as its own deployable: `node dist/apps/database/src/main.js -config=FILE`, the
 * same as `svc server -config=FILE -service=database` (the container image and manifests use this entry).
 */
runAsMain(runServerCommand([...process.argv.slice(2), '-service=database'], { stdout: process.stdout, stderr: process.stderr }), process.stderr);
