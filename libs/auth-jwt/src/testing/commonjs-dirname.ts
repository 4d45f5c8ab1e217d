import * as path from 'node:path';

/**
 * This lib's specs run as ES modules (jose and openid-client are ES modules only), and so do the
 * libs they import: @svc/testing and @svc/local-cluster find their files from `__dirname`, which
 * only CommonJS modules have. Imported first, this gives them the one of libs/testing/src, from
 * which both find what they look for (the repository root is three levels up). Jest runs in the root.
 */
(globalThis as { __dirname?: string }).__dirname ??= path.resolve('libs/testing/src');
