/**
 * The unseal attempt of a server with several gateway workers, held by its primary process: the
 * primary hands each connection to a worker in turn, so a client's shares would otherwise land in
 * different workers and none would reach the threshold. The shares cross only the primary's own
 * bus (the IPC channels to its workers), never NATS.
 */
import { decodeJson, encodeJson, requestJson, type Bus, type Subscription } from '@svc/bus';
import { ServiceError } from '@svc/api-contract';
import type { KeySplit } from './key-split';
import { UnsealProgress, type UnsealAttemptState, type UnsealShares } from './shares';

export type { UnsealAttemptState, UnsealShares } from './shares';

const SUBJECT = 'svc.unseal-progress';

type ProgressCall = { op: 'state' } | { op: 'add'; key: string; split: KeySplit } | { op: 'drop' };

interface ProgressAnswer {
  state?: UnsealAttemptState;
  /** The threshold-th share's answer: every share given, in hex. */
  shares?: string[];
  /** A share refused (malformed, or given twice): the 400's message. */
  refused?: string;
}

/** In the primary: serves one unseal attempt to its workers. */
export function serveUnsealProgress(bus: Bus): Subscription {
  const progress = new UnsealProgress();
  const answer = async (call: ProgressCall): Promise<ProgressAnswer> => {
    if (call.op === 'state') return { state: await progress.state() };
    if (call.op === 'drop') return progress.drop().then(() => ({}));
    const shares = await progress.add(call.key, call.split);
    if (!shares) return {};
    const hex = shares.map((share) => share.toString('hex'));
    shares.forEach((share) => share.fill(0));
    return { shares: hex };
  };
  return bus.serve(SUBJECT, 'unseal-progress', async (msg) => {
    const answered = await answer(decodeJson<ProgressCall>(msg.payload)).catch((err: unknown) => {
      if (err instanceof ServiceError) return { refused: err.message };
      throw err;
    });
    return { payload: encodeJson(answered), headers: {} };
  });
}

/** In a worker: the unseal attempt its primary holds. */
export class PrimaryUnsealProgress implements UnsealShares {
  constructor(private readonly primary: Bus) {}

  async state(): Promise<UnsealAttemptState> {
    const { state } = await this.call({ op: 'state' });
    return state!;
  }

  async add(key: string, split: KeySplit): Promise<Buffer[] | undefined> {
    const { shares } = await this.call({ op: 'add', key, split });
    return shares?.map((share) => Buffer.from(share, 'hex'));
  }

  async drop(): Promise<void> {
    await this.call({ op: 'drop' });
  }

  private async call(call: ProgressCall): Promise<ProgressAnswer> {
    const answer = await requestJson<ProgressAnswer>(this.primary, SUBJECT, call);
    if (answer.refused !== undefined) throw ServiceError.badRequest(answer.refused);
    return answer;
  }
}
