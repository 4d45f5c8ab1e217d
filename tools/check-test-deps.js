// `npm test` runs this first (pretest), and so does `.ci/run` through it: the Debian packages the
// tests need besides npm's, named here only. A missing one is installed when this runs as root
// with apt-get (CI, a container); otherwise it stops at once with the one command to run, rather
// than letting the suites that need the package fail one by one after the build.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

function onPath(command) {
  return (process.env.PATH ?? '').split(path.delimiter).some((dir) => {
    try {
      fs.accessSync(path.join(dir || '.', command), fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** Each package and whether this machine has what the tests use of it. */
const PACKAGES = [
  // The browser tests (test/ui.test.ts) drive it with playwright-core (libs/testing/src/browser.ts).
  { name: 'chromium', present: () => fs.existsSync(process.env.SVC_TEST_CHROMIUM ?? '/usr/bin/chromium') },
  // The pkcs11 seal's tests make tokens with softhsm2-util and load its module (libs/testing/src/softhsm.ts).
  { name: 'softhsm2', present: () => onPath('softhsm2-util') },
  // They also compile a PKCS#11 module in front of it that can stop answering (libs/testing/src/pkcs11-relay.c).
  { name: 'gcc', present: () => onPath('gcc') },
];

const missing = () => PACKAGES.filter((pkg) => !pkg.present()).map((pkg) => pkg.name);

/** Runs apt-get quietly (its errors still show); whether it succeeded. */
function aptGet(args) {
  return spawnSync('apt-get', args, { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } }).status === 0;
}

function main() {
  const needed = missing();
  if (needed.length === 0) return;
  if (process.getuid?.() === 0 && onPath('apt-get')) {
    process.stdout.write(`installing the Debian packages the tests need: ${needed.join(' ')}\n`);
    if (aptGet(['update', '-qq']) && aptGet(['install', '-y', '-qq', ...needed]) && missing().length === 0) return;
  }
  process.stderr.write(`the tests need the Debian packages ${needed.join(', ')}: run  sudo apt-get install -y ${needed.join(' ')}  then npm test again\n`);
  process.exitCode = 1;
}

main();
