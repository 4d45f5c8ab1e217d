import { READ_ONLY_REPLICATED_MESSAGE, ReadOnlyReplicatedStorageError, SEALED_MESSAGE } from '@svc/api-contract';
import { Barrier } from './barrier';
import { CachedPhysical } from './cache';
import { InmemPhysical } from './inmem';
import { Keyring } from './keyring';
import type { WriteEvent } from './types';

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');

describe('Barrier', () => {
  let physical: InmemPhysical;
  let barrier: Barrier;
  let keyring: Keyring;

  beforeEach(() => {
    physical = new InmemPhysical();
    barrier = new Barrier(physical);
    keyring = Keyring.generate();
    barrier.unseal(keyring);
  });

  it('round-trips values and stores term | nonce | ciphertext | tag, never the plaintext', async () => {
    await barrier.put('logical/m/secret', bytes('hunter2'));
    expect(await barrier.get('logical/m/secret')).toEqual(bytes('hunter2'));
    expect(await barrier.get('logical/m/missing')).toBeNull();

    const stored = (await physical.get('logical/m/secret'))!;
    expect(stored.length).toBe(4 + 12 + 'hunter2'.length + 16);
    expect(stored.readUInt32BE(0)).toBe(1);
    expect(stored.includes(bytes('hunter2'))).toBe(false);

    await barrier.put('logical/m/secret', bytes('hunter2'));
    const again = (await physical.get('logical/m/secret'))!;
    expect(again.subarray(4, 16).equals(stored.subarray(4, 16))).toBe(false);
    expect(await barrier.list('logical/m/')).toEqual(['secret']);
  });

  it('keeps values written under older terms readable after rotation', async () => {
    await barrier.put('old', bytes('before rotation'));
    const rotated = keyring.rotate();
    barrier.unseal(rotated);
    await barrier.put('new', bytes('after rotation'));

    expect(barrier.keyring.activeTerm).toBe(2);
    expect((await physical.get('new'))!.readUInt32BE(0)).toBe(2);
    expect(await barrier.get('old')).toEqual(bytes('before rotation'));

    const restored = new Barrier(physical);
    restored.unseal(Keyring.deserialize(rotated.serialize()));
    expect(await restored.get('old')).toEqual(bytes('before rotation'));
    expect(await restored.get('new')).toEqual(bytes('after rotation'));
  });

  it('names an unknown term when the keyring lacks the one a value was written under', async () => {
    barrier.unseal(keyring.rotate());
    await barrier.put('k', bytes('v'));
    barrier.unseal(keyring);
    await expect(barrier.get('k')).rejects.toThrow('barrier: value at "k" is encrypted under unknown keyring term 2');
  });

  it('detects an altered value', async () => {
    await barrier.put('k', bytes('value'));
    const stored = (await physical.get('k'))!;
    stored[20] ^= 0x01;
    await physical.put('k', stored);
    await expect(barrier.get('k')).rejects.toThrow('barrier: value at "k" failed authentication');
  });

  it('refuses a value copied to another key (the path is associated data)', async () => {
    await barrier.put('logical/a/secret', bytes('value'));
    await physical.put('logical/b/secret', (await physical.get('logical/a/secret'))!);
    await expect(barrier.get('logical/b/secret')).rejects.toThrow(
      'barrier: value at "logical/b/secret" failed authentication (altered, or written under another key)',
    );
  });

  it('reads a cached value again as written, whatever a reader does to its copy, and a changed value as changed', async () => {
    const cache = new CachedPhysical(physical);
    const cached = new Barrier(cache);
    cached.unseal(keyring);
    await cached.put('k', bytes('first'));
    const read = (await cached.get('k'))!;
    read.fill(0);
    expect(await cached.get('k')).toEqual(bytes('first'));
    expect(await cached.get('k')).toEqual(bytes('first'));

    // Written by another replica, then reported to this one's cache.
    await barrier.put('k', bytes('second'));
    cache.invalidate(['k']);
    expect(await cached.get('k')).toEqual(bytes('second'));

    cached.seal();
    await expect(cached.get('k')).rejects.toMatchObject({ kind: 'sealed' });
  });

  it('answers 503 for every operation while sealed', async () => {
    await barrier.put('k', bytes('v'));
    barrier.seal();
    expect(barrier.sealed).toBe(true);
    const sealed = { kind: 'sealed', errors: [SEALED_MESSAGE] };
    await expect(barrier.get('k')).rejects.toMatchObject(sealed);
    await expect(barrier.put('k', bytes('x'))).rejects.toMatchObject(sealed);
    await expect(barrier.delete('k')).rejects.toMatchObject(sealed);
    await expect(barrier.list('')).rejects.toMatchObject(sealed);
    await expect(barrier.transaction(async () => 'ran')).rejects.toMatchObject(sealed);
    expect(() => barrier.keyring).toThrow(SEALED_MESSAGE);

    barrier.unseal(keyring);
    expect(barrier.sealed).toBe(false);
    expect(await barrier.get('k')).toEqual(bytes('v'));
  });

  it('reports single writes at once and transaction writes only after commit', async () => {
    const events: WriteEvent[] = [];
    const stop = barrier.onWrite((event) => events.push(event));

    await barrier.put('a', bytes('1'));
    await barrier.delete('a');
    expect(events).toEqual([
      { op: 'put', key: 'a' },
      { op: 'delete', key: 'a' },
    ]);

    events.length = 0;
    await barrier.transaction(async (tx) => {
      await tx.put('b', bytes('2'));
      await tx.delete('c');
      expect(events).toEqual([]);
    });
    expect(events).toEqual([
      { op: 'put', key: 'b' },
      { op: 'delete', key: 'c' },
    ]);

    events.length = 0;
    await expect(
      barrier.transaction(async (tx) => {
        await tx.put('d', bytes('3'));
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    expect(events).toEqual([]);
    expect(await barrier.get('d')).toBeNull();

    stop();
    await barrier.put('e', bytes('4'));
    expect(events).toEqual([]);
  });

  it('still runs every listener when one throws, and reports the error to the writer', async () => {
    const seen: string[] = [];
    barrier.onWrite(() => {
      throw new Error('listener failed');
    });
    barrier.onWrite((event) => seen.push(event.key));
    await expect(barrier.put('k', bytes('v'))).rejects.toThrow('listener failed');
    expect(seen).toEqual(['k']);
    expect(await barrier.get('k')).toEqual(bytes('v'));
  });

  it('encrypts inside transactions and passes locks through', async () => {
    const secret = bytes('transaction secret');
    const value = await barrier.transaction(async (tx) => {
      await tx.lock('counter');
      await tx.put('counter', secret);
      return tx.get('counter');
    });
    expect(value).toEqual(secret);
    expect((await physical.get('counter'))!.includes(secret)).toBe(false);
  });

  describe('write guard (a performance secondary writes only its local keys)', () => {
    const localOnly = (key: string) => key.startsWith('sys/token/');

    it('refuses a guarded put or delete with the read-only-replicated error before storing anything', async () => {
      await barrier.put('logical/m/kept', bytes('before'));
      barrier.setWriteGuard(localOnly);
      expect(barrier.canWrite('logical/m/kept')).toBe(false);
      await expect(barrier.put('logical/m/new', bytes('x'))).rejects.toMatchObject({ kind: 'read-only-replicated', errors: [READ_ONLY_REPLICATED_MESSAGE] });
      await expect(barrier.delete('logical/m/kept')).rejects.toBeInstanceOf(ReadOnlyReplicatedStorageError);
      expect(await physical.get('logical/m/new')).toBeNull();
      expect(await barrier.get('logical/m/kept')).toEqual(bytes('before'));
      // Local keys stay writable, and reads are never guarded.
      await barrier.put('sys/token/id/t', bytes('token'));
      expect(await barrier.get('sys/token/id/t')).toEqual(bytes('token'));
    });

    it('rolls back a transaction that hits a guarded key, local writes included', async () => {
      barrier.setWriteGuard(localOnly);
      const events: WriteEvent[] = [];
      barrier.onWrite((event) => events.push(event));
      await expect(
        barrier.transaction(async (tx) => {
          await tx.put('sys/token/id/t', bytes('token'));
          await tx.put('logical/m/replicated', bytes('x'));
        }),
      ).rejects.toBeInstanceOf(ReadOnlyReplicatedStorageError);
      expect(await physical.get('sys/token/id/t')).toBeNull();
      expect(events).toEqual([]);
    });

    it('writes everything again once the guard is removed (a promoted secondary)', async () => {
      barrier.setWriteGuard(localOnly);
      barrier.setWriteGuard(undefined);
      expect(barrier.canWrite('logical/m/x')).toBe(true);
      await barrier.put('logical/m/x', bytes('x'));
      expect(await barrier.get('logical/m/x')).toEqual(bytes('x'));
    });
  });
});

describe('Keyring.deserialize', () => {
  it('rejects a keyring whose key is not 32 bytes without quoting the key', () => {
    const serialized = JSON.parse(Keyring.generate().serialize().toString()) as { terms: { key: string }[] };
    serialized.terms[0].key = Buffer.from('short-key-material').toString('base64');
    const corrupt = Buffer.from(JSON.stringify(serialized));
    expect(() => Keyring.deserialize(corrupt)).toThrow('keyring: term 1 key is not 32 bytes');
    expect(() => Keyring.deserialize(Buffer.from('{"activeTerm":1}'))).toThrow('keyring: terms missing');
  });
});
