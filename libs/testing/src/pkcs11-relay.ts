import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { SOFTHSM_LIBRARY } from './softhsm';

/**
 * A PKCS#11 module between the processes under test and SoftHSM2 (pkcs11-relay.c, compiled here
 * with gcc against pkcs11js's PKCS#11 headers) that a test can silence: its calls then wait
 * without answering, as an HSM that accepts and never answers, until `heal`. The module reads its
 * orders from files, so it obeys in whichever process loaded it.
 */
export class Pkcs11Relay {
  /** The module's path, for a seal's `lib`. */
  readonly lib: string;

  private constructor(private readonly dir: string) {
    this.lib = path.join(dir, 'libpkcs11-relay.so');
  }

  static build(target = SOFTHSM_LIBRARY): Pkcs11Relay {
    const relay = new Pkcs11Relay(mkdtempSync(path.join(tmpdir(), 'svc-pkcs11-relay-')));
    const headers = path.join(path.dirname(require.resolve('pkcs11js/package.json')), 'includes', 'pkcs11');
    execFileSync(
      'gcc',
      ['-shared', '-fPIC', '-Wall', '-Werror', `-I${headers}`, `-DTARGET_LIBRARY="${target}"`, `-DCONTROL_DIRECTORY="${relay.dir}"`, '-o', relay.lib, path.join(__dirname, 'pkcs11-relay.c'), '-ldl'],
      { stdio: 'pipe' },
    );
    return relay;
  }

  /** From now on, calls wait without answering. */
  silence(): void {
    writeFileSync(this.control('silent'), '');
  }

  /** Calls are answered again, those that were waiting too. */
  heal(): void {
    rmSync(this.control('silent'), { force: true });
  }

  /** The next call finds every session of its process closed, as after the HSM restarted. */
  closeSessions(): void {
    writeFileSync(this.control('close-sessions'), '');
  }

  /** The ids of the processes whose calls were held while silent, oldest first. */
  stalledProcesses(): number[] {
    const file = this.control('stalled');
    return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number) : [];
  }

  remove(): void {
    this.heal();
    rmSync(this.dir, { recursive: true, force: true });
  }

  private control(name: string): string {
    return path.join(this.dir, name);
  }
}
