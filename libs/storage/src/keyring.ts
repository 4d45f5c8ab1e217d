import { randomBytes } from 'node:crypto';

/**
 * The keyring holds every encryption term ever used by the barrier. New writes use the active
 * (highest) term; older terms stay so data written before a rotation remains readable.
 */
export interface KeyTerm {
  term: number;
  key: Buffer; // 32 bytes, AES-256-GCM
  installedAt: string; // RFC 3339
}

interface SerializedKeyring {
  activeTerm: number;
  terms: { term: number; key: string; installedAt: string }[];
}

export class Keyring {
  private readonly byTerm: Map<number, KeyTerm>;

  private constructor(
    terms: KeyTerm[],
    readonly activeTerm: number,
  ) {
    this.byTerm = new Map(terms.map((t) => [t.term, t]));
    if (!this.byTerm.has(activeTerm)) throw new Error('keyring: active term missing');
  }

  /** A fresh keyring with one random term. */
  static generate(now = new Date()): Keyring {
    return new Keyring([{ term: 1, key: randomBytes(32), installedAt: now.toISOString() }], 1);
  }

  /** Throws on a malformed keyring (never quoting key material). */
  static deserialize(bytes: Buffer): Keyring {
    const parsed = JSON.parse(bytes.toString('utf8')) as SerializedKeyring;
    if (!Array.isArray(parsed?.terms)) throw new Error('keyring: terms missing');
    const terms = parsed.terms.map((t) => {
      const key = Buffer.from(typeof t.key === 'string' ? t.key : '', 'base64');
      if (!Number.isInteger(t.term) || t.term < 1) throw new Error('keyring: a term number is not a positive integer');
      if (key.length !== 32) throw new Error(`keyring: term ${t.term} key is not 32 bytes`);
      return { term: t.term, key, installedAt: t.installedAt };
    });
    return new Keyring(terms, parsed.activeTerm);
  }

  serialize(): Buffer {
    const out: SerializedKeyring = {
      activeTerm: this.activeTerm,
      terms: [...this.byTerm.values()].map((t) => ({
        term: t.term,
        key: t.key.toString('base64'),
        installedAt: t.installedAt,
      })),
    };
    return Buffer.from(JSON.stringify(out), 'utf8');
  }

  active(): KeyTerm {
    return this.byTerm.get(this.activeTerm)!;
  }

  term(term: number): KeyTerm | undefined {
    return this.byTerm.get(term);
  }

  /** A new keyring with one more term, which becomes active. The receiver is unchanged. */
  rotate(now = new Date()): Keyring {
    const next = this.activeTerm + 1;
    return new Keyring(
      [...this.byTerm.values(), { term: next, key: randomBytes(32), installedAt: now.toISOString() }],
      next,
    );
  }

  get size(): number {
    return this.byTerm.size;
  }
}
