/**
 * Keyring hand-off between gateways (which unseal) and engine services (which only encrypt and
 * decrypt). The bus is a trust boundary: whoever could publish on it could make services drop
 * their keyring, and whoever could serve `svc.keyring.request` could hand services a keyring of its
 * choosing. On NATS every message is therefore authenticated with the cluster key (by the bus, see
 * `@svc/bus` message-auth), and NATS permissions confine each user to its subjects. The keyring
 * itself never crosses the bus in clear: it is sealed to each receiver's ephemeral key.
 */
import { BusUnavailableError, decodeJson, encodeJson, requestJson, type Bus, type BusMessage, type Subscription } from '@svc/bus';
import type { Keyring } from '@svc/storage';
import { generateTransferKeyPair, openSealed, openSealedKeyring, sealFor, sealKeyringFor, type SealedKeyring } from './transfer';

export interface KeyringSubjects {
  /** Request-reply, served by unsealed gateways in one queue group: `{ publicKey }` -> SealedKeyring. */
  request: string;
  /** Broadcast by a gateway after unseal or rotation: receivers then request the keyring. */
  announce: string;
  /** Broadcast on seal: every receiver drops its keyring. */
  seal: string;
  /**
   * Request-reply between gateways only (`{ publicKey }` -> the root key sealed to it), served by
   * those holding it: a gateway that followed a peer's unseal needs it to store a new keyring.
   */
  rootKey: string;
}

/** `<prefix>.keyring.*`; a distinct prefix isolates clusters (or test runs) sharing one NATS. */
export function keyringSubjects(prefix = 'svc'): KeyringSubjects {
  return { request: `${prefix}.keyring.request`, announce: `${prefix}.keyring.announce`, seal: `${prefix}.keyring.seal`, rootKey: `${prefix}.keyring.root-key` };
}

export interface KeyringBusOptions {
  /** Subject prefix, `svc` by default. */
  subjectPrefix?: string;
}

export const KEYRING_QUEUE_GROUP = 'gateway';

interface KeyringRequest {
  publicKey: string;
}

/** Bound into the sealed root key, so it cannot be opened as a keyring or anything else. */
const ROOT_KEY_PURPOSE = 'svc root key transfer v1';

const NO_PAYLOAD = new Uint8Array();

export interface KeyringDistributorOptions extends KeyringBusOptions {
  /** A copy of the root key while this gateway holds it (the distributor wipes it after sealing it to a peer). */
  rootKey?: () => Buffer | undefined;
  /**
   * The cluster's seal generation this gateway unsealed in, sent with the keyring: a peer that
   * knows of a later seal takes the answer for a stale one (this gateway has yet to follow that seal).
   */
  sealGeneration?: () => number;
}

/** A keyring answer: the keyring sealed to the requester, and the seal generation it belongs to. */
interface KeyringAnswer extends SealedKeyring {
  sealGeneration?: number;
}

/** Gateway side. A sealed gateway does not subscribe, so requests reach only unsealed peers. */
export class KeyringDistributor {
  private keyring?: Keyring;
  private serving?: Subscription;
  private servingRootKey?: Subscription;
  private readonly subjects: KeyringSubjects;

  constructor(
    private readonly bus: Bus,
    private readonly options: KeyringDistributorOptions = {},
  ) {
    this.subjects = keyringSubjects(options.subjectPrefix);
  }

  /**
   * After unseal or rotation: serve this keyring and tell receivers to fetch it. A gateway holding
   * the root key serves it to its peers too (only those that hold it subscribe, so a request never
   * lands on one that cannot answer).
   */
  async publish(keyring: Keyring): Promise<void> {
    this.keyring = keyring;
    this.serving ??= this.bus.serve(this.subjects.request, KEYRING_QUEUE_GROUP, async (msg) => this.answer(msg));
    this.serveRootKey();
    await this.bus.publish(this.subjects.announce, NO_PAYLOAD);
  }

  /** Serves the root key to peer gateways once this one holds it (after unseal, or handed over by a peer). */
  serveRootKey(): void {
    if (!this.serving || this.servingRootKey) return;
    const held = this.options.rootKey?.();
    if (!held) return;
    held.fill(0);
    this.servingRootKey = this.bus.serve(this.subjects.rootKey, KEYRING_QUEUE_GROUP, async (msg) => this.answerRootKey(msg));
  }

  /** On seal: stop serving and make every receiver drop its keyring. */
  async seal(): Promise<void> {
    this.close();
    await this.bus.publish(this.subjects.seal, NO_PAYLOAD);
  }

  close(): void {
    this.keyring = undefined;
    this.serving?.unsubscribe();
    this.serving = undefined;
    this.servingRootKey?.unsubscribe();
    this.servingRootKey = undefined;
  }

  private answer(msg: BusMessage): BusMessage {
    if (!this.keyring) throw new Error('gateway is sealed');
    const answer: KeyringAnswer = { ...sealKeyringFor(requesterKey(msg), this.keyring), sealGeneration: this.options.sealGeneration?.() };
    return { payload: encodeJson(answer), headers: {} };
  }

  private answerRootKey(msg: BusMessage): BusMessage {
    const publicKey = requesterKey(msg);
    const rootKey = this.options.rootKey?.();
    if (!rootKey) throw new Error('gateway holds no root key');
    try {
      return { payload: encodeJson(sealFor(publicKey, rootKey, ROOT_KEY_PURPOSE)), headers: {} };
    } finally {
      rootKey.fill(0);
    }
  }
}

function requesterKey(msg: BusMessage): string {
  const { publicKey } = decodeJson<Partial<KeyringRequest>>(msg.payload);
  if (typeof publicKey !== 'string') throw new Error('keyring request must carry a publicKey string');
  return publicKey;
}

export interface KeyringReceiverOptions extends KeyringBusOptions {
  requestTimeoutMs?: number;
  /** Failures other than "no gateway answered" (which is normal until one is unsealed). */
  onError?: (err: unknown) => void;
}

/** Called with the keyring (and the seal generation its gateway unsealed in, when it says), or undefined when sealed. */
export type KeyringListener = (keyring: Keyring | undefined, sealGeneration?: number) => void;

/** Service side: holds the keyring while some gateway is unsealed, and nothing otherwise. */
export class KeyringReceiver {
  private readonly transferKeys = generateTransferKeyPair();
  private readonly subjects: KeyringSubjects;
  private readonly listeners = new Set<KeyringListener>();
  private subscriptions: Subscription[] = [];
  private current?: Keyring;
  /** Bumped by every fetch and every seal, so a late reply never overrides a newer event. */
  private generation = 0;

  constructor(
    private readonly bus: Bus,
    private readonly options: KeyringReceiverOptions = {},
  ) {
    this.subjects = keyringSubjects(options.subjectPrefix);
  }

  get keyring(): Keyring | undefined {
    return this.current;
  }

  /** Called with the new keyring, or undefined when sealed. Returns an unsubscribe function. */
  onChange(listener: KeyringListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Listens for announcements and asks once now; resolves when that first request has settled. */
  async start(): Promise<void> {
    this.subscriptions.push(
      this.bus.subscribe(this.subjects.announce, () => void this.fetch()),
      this.bus.subscribe(this.subjects.seal, () => {
        this.generation++;
        this.update(undefined);
      }),
    );
    await this.fetch();
  }

  /** Asks for the current keyring now (e.g. a peer rotated it and says so). */
  refresh(): Promise<void> {
    return this.fetch();
  }

  /**
   * Asks a peer gateway holding the root key for it (sealed to this receiver's key); a
   * BusUnavailableError when none answers. The caller wipes it.
   */
  async fetchRootKey(): Promise<Buffer> {
    const request: KeyringRequest = { publicKey: this.transferKeys.publicKey };
    const sealed = await requestJson<SealedKeyring>(this.bus, this.subjects.rootKey, request, { timeoutMs: this.options.requestTimeoutMs });
    return openSealed(this.transferKeys.privateKey, sealed, ROOT_KEY_PURPOSE, 'sealed root key');
  }

  close(): void {
    this.subscriptions.forEach((s) => s.unsubscribe());
    this.subscriptions = [];
  }

  private async fetch(): Promise<void> {
    const generation = ++this.generation;
    try {
      const request: KeyringRequest = { publicKey: this.transferKeys.publicKey };
      const sealed = await requestJson<KeyringAnswer>(this.bus, this.subjects.request, request, {
        timeoutMs: this.options.requestTimeoutMs,
      });
      const keyring = openSealedKeyring(this.transferKeys.privateKey, sealed);
      if (generation === this.generation) this.update(keyring, typeof sealed.sealGeneration === 'number' ? sealed.sealGeneration : undefined);
    } catch (err) {
      if (!(err instanceof BusUnavailableError)) this.options.onError?.(err);
    }
  }

  private update(keyring: Keyring | undefined, sealGeneration?: number): void {
    if (keyring === this.current) return;
    this.current = keyring;
    this.listeners.forEach((listener) => listener(keyring, sealGeneration));
  }
}
