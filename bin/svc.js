#!/usr/bin/env node
// Entry point of the `svc` binary; the compiled CLI lives in dist/ (npm run build).
require('../dist/apps/cli/src/main.js');
