import { webcrypto } from 'node:crypto';
import type * as PeculiarX509 from '@peculiar/x509';

export type X509 = typeof PeculiarX509;

let loading: Promise<X509> | undefined;

/**
 * @peculiar/x509, set up to use Node's WebCrypto. Loaded on the first call, by the features that
 * issue or read certificates, rather than at start by every process: with its ASN.1 schemas it
 * is one of the heaviest modules the server uses.
 */
export function loadX509(): Promise<X509> {
  return (loading ??= (async () => {
    // It resolves its ASN.1 serializers through tsyringe, which needs the Reflect polyfill first.
    await import('reflect-metadata');
    const x509 = await import('@peculiar/x509');
    x509.cryptoProvider.set(webcrypto as unknown as Parameters<X509['cryptoProvider']['set']>[0]);
    return x509;
  })());
}
