import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Password hashes with scrypt from node:crypto: memory-hard, computed on libuv's thread pool (so a
 * login does not stall the event loop as a JavaScript bcrypt would), and no dependency to keep up.
 * Stored as `scrypt$N$r$p$<salt>$<hash>` (base64), so the cost can be raised later and old hashes
 * still verify.
 */
const COST: Required<Pick<ScryptOptions, 'N' | 'r' | 'p'>> = { N: 16384, r: 8, p: 1 };
const KEY_LENGTH = 32;
const SALT_LENGTH = 16;

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_LENGTH);
  const hash = await derive(password, salt, COST);
  return ['scrypt', COST.N, COST.r, COST.p, salt.toString('base64'), hash.toString('base64')].join('$');
}

/** Compares in constant time. A missing hash costs the same as a wrong password, so timing tells nothing. */
export async function verifyPassword(password: string, stored: string | undefined): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = (stored ?? ABSENT).split('$');
  if (scheme !== 'scrypt') return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await derive(password, Buffer.from(salt, 'base64'), { N: Number(n), r: Number(r), p: Number(p) });
  return timingSafeEqual(actual, expected) && stored !== undefined;
}

/** Stands in for the hash of a user that does not exist. */
const ABSENT = ['scrypt', COST.N, COST.r, COST.p, randomBytes(SALT_LENGTH).toString('base64'), randomBytes(KEY_LENGTH).toString('base64')].join('$');

function derive(password: string, salt: Buffer, cost: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, KEY_LENGTH, { ...cost, maxmem: 64 * 1024 * 1024 }, (err, key) => (err ? reject(err) : resolve(key)));
  });
}
