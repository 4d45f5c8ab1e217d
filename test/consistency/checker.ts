/**
 * A read-your-writes checker for a running cluster: many clients, every request on a connection of
 * its own to a gateway picked at random (so consecutive requests meet different workers and
 * replicas), doing random operations on objects each client owns (KV secrets, tokens, mounts,
 * policies, auth methods) and reading any client's objects. Every acknowledged write must be
 * observed by every read sent after it, anywhere, and no read may go back to an older state
 * (history.ts). Used by test/consistency.test.ts (short form) and `npm run soak` (long form).
 */
import { request } from 'node:http';
import { randomBytes } from 'node:crypto';
import { ABSENT, PRESENT, TrackedObject, type Violation } from './history';

export interface CheckerOptions {
  /** Base URLs of the gateways (http://host:port). */
  urls: string[];
  rootToken: string;
  clients: number;
  durationMs: number;
  /** A KV version 2 mount the checker may use (created when missing). */
  kvMount?: string;
  /** Called with a line per second of progress, for the long form. */
  progress?: (line: string) => void;
}

export interface CheckerReport {
  operations: number;
  reads: number;
  violations: Violation[];
  /** Answers no operation expects (5xx, or a status that means neither state), with the request. */
  unexpected: string[];
}

interface Answer {
  status: number;
  body: Record<string, unknown> | undefined;
}

/** A field of a JSON answer by its path, e.g. `at(body, 'auth', 'client_token')`. */
function at(body: unknown, ...path: string[]): unknown {
  return path.reduce<unknown>((value, name) => (value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[name] : undefined), body);
}

type Kind = 'kv' | 'token' | 'mount' | 'policy' | 'auth';

/** One object a client owns: how it reads, how it changes, and what it holds for that. */
interface Owned {
  kind: Kind;
  tracked: TrackedObject;
  /** Kind-specific: a token's value and accessor, a policy's reader token, a counter. */
  token?: string;
  accessor?: string;
  readerToken?: string;
  generation: number;
  /** Login tokens issued by an auth method, revoked with it. */
  logins: Owned[];
  final: boolean;
}

const PASSWORD = 'checker-password';
const KINDS: Kind[] = ['kv', 'kv', 'token', 'token', 'mount', 'policy', 'auth'];
const MAX_LIVE_PER_CLIENT = 6;

export async function runChecker(options: CheckerOptions): Promise<CheckerReport> {
  const run = new CheckerRun(options);
  await run.prepare();
  await Promise.all(Array.from({ length: options.clients }, (_, i) => run.client(i)));
  return run.report();
}

class CheckerRun {
  private readonly started = performance.now();
  private readonly deadline: number;
  private readonly objects: Owned[] = [];
  private readonly violations: Violation[] = [];
  private readonly unexpected: string[] = [];
  private readonly kvMount: string;
  private operations = 0;
  private reads = 0;
  private serial = 0;
  private readonly runId = randomBytes(3).toString('hex');

  constructor(private readonly options: CheckerOptions) {
    this.deadline = this.started + options.durationMs;
    this.kvMount = options.kvMount ?? `chk-kv-${this.runId}`;
  }

  async prepare(): Promise<void> {
    const tune = await this.call('GET', `/v1/sys/mounts/${this.kvMount}/tune`, this.options.rootToken);
    if (tune.status === 200) return;
    const mounted = await this.call('POST', `/v1/sys/mounts/${this.kvMount}`, this.options.rootToken, { type: 'kv', options: { version: '2' } });
    if (mounted.status !== 204) throw new Error(`the checker's KV mount could not be created: ${mounted.status}`);
  }

  report(): CheckerReport {
    return { operations: this.operations, reads: this.reads, violations: this.violations, unexpected: this.unexpected };
  }

  async client(index: number): Promise<void> {
    const owned: Owned[] = [];
    let lastProgress = performance.now();
    while (performance.now() < this.deadline) {
      const live = owned.filter((object) => !object.final && !object.tracked.retired);
      const roll = Math.random();
      if (live.length < 2 || (roll < 0.25 && live.length < MAX_LIVE_PER_CLIENT)) {
        const object = await this.create(pick(KINDS));
        if (object) owned.push(object);
      } else if (roll < 0.55) {
        await this.change(pick(live));
      } else {
        const readable = this.objects.filter((object) => !object.tracked.retired);
        if (readable.length > 0) await this.read(pick(readable));
      }
      if (index === 0 && this.options.progress && performance.now() - lastProgress > 1_000) {
        lastProgress = performance.now();
        this.options.progress(`${Math.round((lastProgress - this.started) / 1000)} s: ${this.operations} writes, ${this.reads} reads, ${this.violations.length} violations, ${this.unexpected.length} unexpected answers`);
      }
    }
  }

  /** Creates an object of a kind; undefined when the server refused (recorded as unexpected). */
  private async create(kind: Kind): Promise<Owned | undefined> {
    const id = `${this.runId}-${++this.serial}`;
    const root = this.options.rootToken;
    switch (kind) {
      case 'kv': {
        const object = this.own(kind, `kv ${this.kvMount}/${id}`, ABSENT);
        object.accessor = id;
        await this.write(object, `v${object.generation}`, 'POST', `/v1/${this.kvMount}/data/${id}`, root, { data: { value: `v${object.generation}` } }, [200]);
        return object;
      }
      case 'token': {
        const object = this.own(kind, `token #${id}`, 'refused');
        const state = object.tracked.begin('live', performance.now());
        const created = await this.call('POST', '/v1/auth/token/create', root, { policies: ['default'], ttl: '1h' });
        this.operations++;
        if (created.status !== 200) return this.fail(object, 'POST auth/token/create', created);
        object.token = String(at(created.body, 'auth', 'client_token'));
        object.accessor = String(at(created.body, 'auth', 'accessor'));
        state.ackedAt = performance.now();
        return object;
      }
      case 'mount': {
        const object = this.own(kind, `mount chk-m-${id}/`, ABSENT);
        object.accessor = `chk-m-${id}`;
        await this.write(object, 'd0', 'POST', `/v1/sys/mounts/${object.accessor}`, root, { type: 'kv', description: 'd0' }, [204]);
        return object;
      }
      case 'policy': {
        const object = this.own(kind, `policy chk-p-${id}`, ABSENT);
        object.accessor = `chk-p-${id}`;
        if (!(await this.write(object, 'k0', 'PUT', `/v1/sys/policies/acl/${object.accessor}`, root, { policy: this.policyText(object, 0) }, [204]))) return object;
        const reader = await this.call('POST', '/v1/auth/token/create', root, { policies: [object.accessor], ttl: '1h' });
        if (reader.status !== 200) return this.fail(object, 'POST auth/token/create (policy reader)', reader);
        object.readerToken = String(at(reader.body, 'auth', 'client_token'));
        return object;
      }
      case 'auth': {
        const object = this.own(kind, `auth method chk-a-${id}/`, ABSENT);
        object.accessor = `chk-a-${id}`;
        const enabled = await this.call('POST', `/v1/sys/auth/${object.accessor}`, root, { type: 'userpass' });
        if (enabled.status !== 204) return this.fail(object, 'POST sys/auth', enabled);
        await this.write(object, 'enabled', 'POST', `/v1/auth/${object.accessor}/users/u`, root, { password: PASSWORD, token_policies: 'default' }, [204]);
        return object;
      }
    }
  }

  private own(kind: Kind, name: string, initial: string): Owned {
    const object: Owned = { kind, tracked: new TrackedObject(name, initial), generation: 0, logins: [], final: false };
    this.objects.push(object);
    return object;
  }

  /** One change of an object its owner makes. */
  private async change(object: Owned): Promise<void> {
    const root = this.options.rootToken;
    const roll = Math.random();
    const next = ++object.generation;
    switch (object.kind) {
      case 'kv': {
        const path = `/v1/${this.kvMount}`;
        if (roll < 0.6) await this.write(object, `v${next}`, 'POST', `${path}/data/${object.accessor}`, root, { data: { value: `v${next}` } }, [200]);
        else if (roll < 0.85 && object.tracked.current !== ABSENT) await this.write(object, ABSENT, 'DELETE', `${path}/data/${object.accessor}`, root, undefined, [204]);
        else await this.write(object, ABSENT, 'DELETE', `${path}/metadata/${object.accessor}`, root, undefined, [204]);
        return;
      }
      case 'token': {
        object.final = true;
        const ways: [string, string, string | undefined, unknown][] = [
          ['POST', '/v1/auth/token/revoke', root, { token: object.token }],
          ['POST', '/v1/auth/token/revoke-accessor', root, { accessor: object.accessor }],
          ['POST', '/v1/auth/token/revoke-self', object.token, undefined],
          ['PUT', '/v1/sys/leases/revoke', root, { lease_id: `auth/token/create/${object.accessor}` }],
        ];
        const [method, path, token, body] = pick(ways);
        await this.write(object, 'refused', method, path, token, body, [204]);
        return;
      }
      case 'mount': {
        if (roll < 0.6) {
          await this.write(object, `d${next}`, 'POST', `/v1/sys/mounts/${object.accessor}/tune`, root, { description: `d${next}` }, [204]);
        } else {
          object.final = true;
          await this.write(object, ABSENT, 'DELETE', `/v1/sys/mounts/${object.accessor}`, root, undefined, [204]);
        }
        return;
      }
      case 'policy': {
        if (roll < 0.6) {
          await this.write(object, `k${next}`, 'PUT', `/v1/sys/policies/acl/${object.accessor}`, root, { policy: this.policyText(object, next) }, [204]);
        } else {
          object.final = true;
          await this.write(object, ABSENT, 'DELETE', `/v1/sys/policies/acl/${object.accessor}`, root, undefined, [204]);
        }
        return;
      }
      case 'auth': {
        if (roll < 0.6) {
          const login = this.own('token', `login token of ${object.tracked.name}`, 'refused');
          login.final = true;
          const state = login.tracked.begin('live', performance.now());
          const answer = await this.call('POST', `/v1/auth/${object.accessor}/login/u`, undefined, { password: PASSWORD });
          this.operations++;
          if (answer.status !== 200) {
            this.fail(login, `POST auth/${object.accessor}/login/u`, answer);
            return;
          }
          login.token = String(at(answer.body, 'auth', 'client_token'));
          state.ackedAt = performance.now();
          object.logins.push(login);
        } else {
          // Disabling an auth method revokes the tokens it issued.
          object.final = true;
          const sentAt = performance.now();
          const revoked = object.logins.filter((login) => !login.tracked.retired).map((login) => login.tracked.begin('refused', sentAt));
          const removed = object.tracked.begin(ABSENT, sentAt);
          const answer = await this.call('DELETE', `/v1/sys/auth/${object.accessor}`, root);
          this.operations++;
          if (answer.status !== 204) {
            this.fail(object, 'DELETE sys/auth', answer);
            object.logins.forEach((login) => (login.tracked.retired = true));
            return;
          }
          const ackedAt = performance.now();
          for (const state of [removed, ...revoked]) state.ackedAt = ackedAt;
        }
        return;
      }
    }
  }

  /** Sends a write that moves an object to `value`; false (and the object retired) when its outcome is unknown. */
  private async write(object: Owned, value: string, method: string, path: string, token: string | undefined, body: unknown, expected: number[]): Promise<boolean> {
    const state = object.tracked.begin(value, performance.now());
    const answer = await this.call(method, path, token, body);
    this.operations++;
    if (!expected.includes(answer.status)) {
      this.fail(object, `${method} ${path}`, answer);
      return false;
    }
    state.ackedAt = performance.now();
    return true;
  }

  private fail(object: Owned, what: string, answer: Answer): undefined {
    object.tracked.retired = true;
    this.unexpected.push(`${what} (${object.tracked.name}) answered ${answer.status}: ${JSON.stringify(answer.body?.errors ?? answer.body)}`);
    return undefined;
  }

  /** Reads an object in one of the ways its state shows, and checks what was seen. */
  private async read(object: Owned): Promise<void> {
    const sentAt = performance.now();
    const observed = await this.observe(object);
    const answeredAt = performance.now();
    this.reads++;
    if (observed === undefined) return;
    const failed = object.tracked.check(observed.value, sentAt, answeredAt);
    if (!failed) return;
    this.violations.push({
      object: object.tracked.name,
      observed: observed.value,
      allowed: failed.allowed,
      sentAtMs: Math.round(sentAt - this.started),
      answeredAtMs: Math.round(answeredAt - this.started),
      detail: observed.how,
    });
  }

  private async observe(object: Owned): Promise<{ value: string; how: string } | undefined> {
    const root = this.options.rootToken;
    const either = <T>(a: T, b: T) => (Math.random() < 0.5 ? a : b);
    switch (object.kind) {
      case 'kv': {
        const answer = await this.call('GET', `/v1/${this.kvMount}/data/${object.accessor}`, root);
        if (answer.status === 200) return { value: String(at(answer.body, 'data', 'data', 'value')), how: 'KV read' };
        return this.expect(object, 'KV read', answer, { 404: ABSENT });
      }
      case 'token': {
        if (!object.token) return undefined;
        const answer = await this.call('GET', '/v1/auth/token/lookup-self', object.token);
        return this.expect(object, 'token lookup-self', answer, { 200: 'live', 403: 'refused' });
      }
      case 'mount': {
        if (either(true, false)) {
          const answer = await this.call('GET', `/v1/sys/mounts/${object.accessor}/tune`, root);
          if (answer.status === 200) return { value: String(at(answer.body, 'description')), how: 'mount tune read' };
          return this.expect(object, 'mount tune read', answer, { 400: ABSENT });
        }
        const answer = await this.call('PUT', `/v1/${object.accessor}/probe`, root, { written: 'yes' });
        // A write shows the mount exists, not which tune it has.
        return this.expect(object, 'write to the mount', answer, { 204: PRESENT, 404: ABSENT });
      }
      case 'policy': {
        if (either(true, false) && object.readerToken) {
          const paths = Array.from({ length: object.generation + 2 }, (_, k) => this.policyPath(object, k));
          const answer = await this.call('POST', '/v1/sys/capabilities-self', object.readerToken, { paths });
          if (answer.status !== 200) return this.expect(object, 'capabilities-self', answer, {});
          const granted = paths.findIndex((path) => (at(answer.body, path) as string[] | undefined)?.includes('read'));
          return { value: granted < 0 ? ABSENT : `k${granted}`, how: "the policy's token's capabilities" };
        }
        const answer = await this.call('GET', `/v1/sys/policies/acl/${object.accessor}`, root);
        if (answer.status === 200) {
          const match = /\/(\d+)"/.exec(String(at(answer.body, 'data', 'policy')));
          return { value: match ? `k${match[1]}` : 'unreadable', how: 'policy read' };
        }
        return this.expect(object, 'policy read', answer, { 404: ABSENT });
      }
      case 'auth': {
        const answer = await this.call('POST', `/v1/auth/${object.accessor}/login/u`, undefined, { password: PASSWORD });
        if (answer.status === 200) void this.call('POST', '/v1/auth/token/revoke-self', String(at(answer.body, 'auth', 'client_token')));
        return this.expect(object, 'login', answer, { 200: 'enabled', 404: ABSENT, 400: ABSENT });
      }
    }
  }

  private expect(object: Owned, how: string, answer: Answer, states: Record<number, string>): { value: string; how: string } | undefined {
    const value = states[answer.status];
    if (value !== undefined) return { value, how };
    this.unexpected.push(`${how} of ${object.tracked.name} answered ${answer.status}: ${JSON.stringify(answer.body?.errors ?? answer.body)}`);
    return undefined;
  }

  private policyPath(object: Owned, generation: number): string {
    return `${this.kvMount}/data/policy/${object.accessor}/${generation}`;
  }

  private policyText(object: Owned, generation: number): string {
    return `path "${this.policyPath(object, generation)}" { capabilities = ["read"] }`;
  }

  /** One request on a connection of its own, to a gateway picked at random. */
  call(method: string, path: string, token?: string, body?: unknown): Promise<Answer> {
    const url = new URL(path, pick(this.options.urls));
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string | number> = { connection: 'close' };
    if (token) headers['x-service-token'] = token;
    if (payload !== undefined) headers['content-length'] = Buffer.byteLength(payload);
    return new Promise((resolve) => {
      const req = request(url, { method, headers, agent: false, timeout: 30_000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: Record<string, unknown> | undefined;
          try {
            parsed = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
          } catch {
            parsed = { errors: [text.slice(0, 200)] };
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
        res.on('error', (err) => resolve({ status: 0, body: { errors: [err.message] } }));
      });
      req.on('timeout', () => req.destroy(new Error('no answer within 30 s')));
      req.on('error', (err) => resolve({ status: 0, body: { errors: [err.message] } }));
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }
}

function pick<T>(items: readonly T[]): T {
  return items[Math.floor(Math.random() * items.length)];
}
