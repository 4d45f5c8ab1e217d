import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

/** Where Debian's softhsm2 package puts the PKCS#11 library. */
export const SOFTHSM_LIBRARY = ['/usr/lib/softhsm/libsofthsm2.so', '/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so'].find((file) => existsSync(file)) ?? '/usr/lib/softhsm/libsofthsm2.so';

/**
 * SoftHSM2 with its tokens in a temporary directory. The library reads SOFTHSM2_CONF when a process
 * initializes it, so `use()` points the processes this test starts (servers, the pkcs11 seal's
 * library processes) at the directory before any of them loads the library.
 */
export class SoftHsm {
  readonly conf: string;

  private constructor(private readonly dir: string) {
    this.conf = path.join(dir, 'softhsm2.conf');
    mkdirSync(path.join(dir, 'tokens'));
    writeFileSync(this.conf, `directories.tokendir = ${path.join(dir, 'tokens')}\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n`);
  }

  static create(): SoftHsm {
    return new SoftHsm(mkdtempSync(path.join(tmpdir(), 'svc-softhsm-')));
  }

  /** Sets SOFTHSM2_CONF for the processes this test starts (they inherit the test's environment). */
  use(): this {
    process.env.SOFTHSM2_CONF = this.conf;
    return this;
  }

  /** Initializes a token in the next free slot, with a user PIN and a security officer PIN. */
  initToken(label: string, pin: string, soPin = `so-${pin}`): void {
    execFileSync('softhsm2-util', ['--init-token', '--free', '--label', label, '--pin', pin, '--so-pin', soPin], { env: { ...process.env, SOFTHSM2_CONF: this.conf }, stdio: 'pipe' });
  }

  /** The id of the slot holding the token `label`, as softhsm2-util shows it. */
  slotOf(label: string): string {
    const listing = execFileSync('softhsm2-util', ['--show-slots'], { env: { ...process.env, SOFTHSM2_CONF: this.conf }, encoding: 'utf8' });
    for (const slot of listing.split(/^Slot /m).slice(1)) {
      if (new RegExp(`^\\s*Label:\\s*${label}\\s*$`, 'm').test(slot)) return slot.split('\n')[0].trim();
    }
    throw new Error(`no SoftHSM token labelled ${label}`);
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
