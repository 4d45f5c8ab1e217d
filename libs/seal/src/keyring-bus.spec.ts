import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { BusUnavailableError, MemoryBus, MemoryBusHub, createBus, requestJson, type Bus } from '@svc/bus';
import { Keyring } from '@svc/storage';
import { KeyringDistributor, KeyringReceiver, keyringSubjects, type KeyringSubjects } from './keyring-bus';
import { generateTransferKeyPair, openSealedKeyring, sealKeyringFor, type SealedKeyring } from './transfer';

const memoryHub = new MemoryBusHub();
/** The buses of these tests are one cluster: one cluster key. */
const clusterKeyFile = path.join(mkdtempSync(path.join(tmpdir(), 'seal-keyring-test-')), 'cluster.key');
writeFileSync(clusterKeyFile, randomBytes(32).toString('base64'), { mode: 0o600 });
const transports: { name: string; connect: () => Promise<Bus> }[] = [
  { name: 'memory', connect: async () => new MemoryBus({ hub: memoryHub }) },
  { name: 'nats', connect: () => createBus({ servers: ['127.0.0.1:4222'], name: 'seal-keyring-test', clusterKeyFile }) },
];

function nextChange(receiver: KeyringReceiver): Promise<Keyring | undefined> {
  return new Promise((resolve) => {
    const stop = receiver.onChange((keyring) => {
      stop();
      resolve(keyring);
    });
  });
}

describe.each(transports)('keyring distribution over the $name bus', ({ connect }) => {
  let subjectPrefix: string;
  let subjects: KeyringSubjects;
  let buses: Bus[];
  let closers: (() => void)[];
  let errors: unknown[];
  let distributor: KeyringDistributor;

  /** A new connection, as another process would have. */
  async function open(): Promise<Bus> {
    const bus = await connect();
    buses.push(bus);
    return bus;
  }

  async function service(): Promise<KeyringReceiver> {
    const receiver = new KeyringReceiver(await open(), { subjectPrefix, onError: (err) => errors.push(err) });
    closers.push(() => receiver.close());
    return receiver;
  }

  beforeEach(async () => {
    subjectPrefix = `test.seal.${randomUUID()}`;
    subjects = keyringSubjects(subjectPrefix);
    buses = [];
    closers = [];
    errors = [];
    distributor = new KeyringDistributor(await open(), { subjectPrefix });
    closers.push(() => distributor.close());
  });

  afterEach(async () => {
    closers.forEach((close) => close());
    await Promise.all(buses.map((bus) => bus.close()));
  });

  it('a service started before unseal gets the keyring when the gateway announces it', async () => {
    const receiver = await service();
    await receiver.start();
    expect(receiver.keyring).toBeUndefined();

    const keyring = Keyring.generate();
    const changed = nextChange(receiver);
    await distributor.publish(keyring);
    expect((await changed)?.serialize()).toEqual(keyring.serialize());
    expect(receiver.keyring?.serialize()).toEqual(keyring.serialize());
    expect(errors).toEqual([]);
  });

  it('a service started after unseal gets the keyring at start, and follows a rotation', async () => {
    const keyring = Keyring.generate();
    await distributor.publish(keyring);
    const receiver = await service();
    await receiver.start();
    expect(receiver.keyring?.serialize()).toEqual(keyring.serialize());

    const changed = nextChange(receiver);
    await distributor.publish(keyring.rotate());
    expect((await changed)?.activeTerm).toBe(2);
  });

  it('tells receivers the seal generation the answering gateway unsealed in', async () => {
    const gateway = new KeyringDistributor(await open(), { subjectPrefix: `${subjectPrefix}.generations`, sealGeneration: () => 7 });
    closers.push(() => gateway.close());
    await gateway.publish(Keyring.generate());
    const receiver = new KeyringReceiver(await open(), { subjectPrefix: `${subjectPrefix}.generations` });
    closers.push(() => receiver.close());
    const generations: (number | undefined)[] = [];
    receiver.onChange((_keyring, sealGeneration) => generations.push(sealGeneration));
    await receiver.start();
    expect(generations).toEqual([7]);
  });

  it('answers a request with the keyring sealed to the requester, never in clear', async () => {
    const keyring = Keyring.generate();
    await distributor.publish(keyring);
    const requester = generateTransferKeyPair();
    const sealed = await requestJson<SealedKeyring>(await open(), subjects.request, { publicKey: requester.publicKey });

    expect(JSON.stringify(sealed)).not.toContain(keyring.active().key.toString('base64'));
    expect(Buffer.from(sealed.ciphertext, 'base64').includes(keyring.active().key)).toBe(false);
    expect(openSealedKeyring(requester.privateKey, sealed).serialize()).toEqual(keyring.serialize());
    expect(() => openSealedKeyring(generateTransferKeyPair().privateKey, sealed)).toThrow('cannot be opened');
  });

  it('a seal broadcast makes every service drop its keyring, and a sealed gateway serves none', async () => {
    await distributor.publish(Keyring.generate());
    const [first, second] = [await service(), await service()];
    await Promise.all([first.start(), second.start()]);
    expect(first.keyring).toBeDefined();
    expect(second.keyring).toBeDefined();

    const dropped = Promise.all([nextChange(first), nextChange(second)]);
    await distributor.seal();
    expect(await dropped).toEqual([undefined, undefined]);

    const late = await service();
    await late.start();
    expect(late.keyring).toBeUndefined();
    const probe = await open();
    await expect(probe.request(subjects.request, new Uint8Array(), { timeoutMs: 2000 })).rejects.toThrow(
      BusUnavailableError,
    );
  });

  it('discards a keyring reply that arrives after a seal broadcast', async () => {
    const keyring = Keyring.generate();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let received!: () => void;
    const requestReceived = new Promise<void>((resolve) => (received = resolve));
    // A slow gateway: it holds the reply until the test has broadcast the seal.
    const slowGateway = await open();
    const serving = slowGateway.serve(subjects.request, 'gateway', async (msg) => {
      received();
      await released;
      const { publicKey } = JSON.parse(Buffer.from(msg.payload).toString()) as { publicKey: string };
      return { payload: Buffer.from(JSON.stringify(sealKeyringFor(publicKey, keyring))), headers: {} };
    });
    closers.push(() => serving.unsubscribe());
    await slowGateway.flush();

    const receiver = await service();
    const started = receiver.start();
    await requestReceived;
    await slowGateway.publish(subjects.seal, new Uint8Array());
    await slowGateway.flush();
    release();
    await started;
    expect(receiver.keyring).toBeUndefined();
  });

  it('a gateway holding the root key hands it to a peer sealed to that peer; one holding none is never asked', async () => {
    const rootKey = randomBytes(32);
    const follower = new KeyringDistributor(await open(), { subjectPrefix, rootKey: () => undefined });
    closers.push(() => follower.close());
    const peer = await service();
    await follower.publish(Keyring.generate());
    // Only the follower serves: nobody answers a root key request.
    await expect(peer.fetchRootKey()).rejects.toBeInstanceOf(BusUnavailableError);

    const holder = new KeyringDistributor(await open(), { subjectPrefix, rootKey: () => Buffer.from(rootKey) });
    closers.push(() => holder.close());
    await holder.publish(Keyring.generate());
    // Every request lands on the holder, though both serve the keyring in one queue group.
    for (let i = 0; i < 4; i++) expect((await peer.fetchRootKey()).equals(rootKey)).toBe(true);

    const requester = generateTransferKeyPair();
    const sealed = await requestJson<SealedKeyring>(await open(), subjects.rootKey, { publicKey: requester.publicKey });
    expect(Buffer.from(sealed.ciphertext, 'base64').includes(rootKey)).toBe(false);
    // Sealed for a root key transfer, it does not open as a keyring.
    expect(() => openSealedKeyring(requester.privateKey, sealed)).toThrow('cannot be opened');

    await holder.seal();
    await expect(peer.fetchRootKey()).rejects.toBeInstanceOf(BusUnavailableError);
  });

  it('the gateway rejects a request without a public key', async () => {
    await distributor.publish(Keyring.generate());
    await expect((await open()).request(subjects.request, Buffer.from('{}'))).rejects.toThrow(
      'keyring request must carry a publicKey string',
    );
  });
});
