import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium (`.ci/run` installs it). */
const CHROMIUM = process.env.SVC_TEST_CHROMIUM ?? '/usr/bin/chromium';

/**
 * Flags for a closed network: without the background-networking ones Chromium's own connections
 * (updates, sync, QUIC probes) are refused and slow every page; no sandbox, since tests run as root.
 */
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
}

/** Where browser tests write their screenshots (gitignored), made on first use. */
export function artifactPath(name: string): string {
  const directory = path.resolve(__dirname, '../../../test-artifacts/ui');
  mkdirSync(directory, { recursive: true });
  return path.join(directory, name);
}
