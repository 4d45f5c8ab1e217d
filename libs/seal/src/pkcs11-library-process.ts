import { type ChildProcess, spawn } from 'node:child_process';
import * as pkcs11js from 'pkcs11js';

/** The library's calls the seal makes, as pkcs11js's synchronous methods take them. */
interface Pkcs11Calls {
  load(path: string): void;
  C_Initialize(options: pkcs11js.InitializationOptions): void;
  C_Finalize(): void;
  C_GetSlotList(tokenPresent: boolean): pkcs11js.Handle[];
  C_GetTokenInfo(slot: pkcs11js.Handle): pkcs11js.TokenInfo;
  C_OpenSession(slot: pkcs11js.Handle, flags: number): pkcs11js.Handle;
  C_Login(session: pkcs11js.Handle, userType: number, pin: string): void;
  C_FindObjectsInit(session: pkcs11js.Handle, template: pkcs11js.Template): void;
  C_FindObjects(session: pkcs11js.Handle): pkcs11js.Handle | null;
  C_FindObjectsFinal(session: pkcs11js.Handle): void;
  C_EncryptInit(session: pkcs11js.Handle, mechanism: pkcs11js.Mechanism, key: pkcs11js.Handle): void;
  C_Encrypt(session: pkcs11js.Handle, inData: Buffer, outData: Buffer): Buffer;
  C_DecryptInit(session: pkcs11js.Handle, mechanism: pkcs11js.Mechanism, key: pkcs11js.Handle): void;
  C_Decrypt(session: pkcs11js.Handle, inData: Buffer, outData: Buffer): Buffer;
  C_GenerateKey(session: pkcs11js.Handle, mechanism: pkcs11js.Mechanism, template: pkcs11js.Template): pkcs11js.Handle;
  C_GenerateKeyPair(session: pkcs11js.Handle, mechanism: pkcs11js.Mechanism, publicTemplate: pkcs11js.Template, privateTemplate: pkcs11js.Template): pkcs11js.KeyPair;
}

type CallName = keyof Pkcs11Calls;

interface Answer {
  id: number;
  result?: unknown;
  error?: { name: string; message: string; code?: number; method?: string };
}

interface PendingCall {
  method: CallName;
  resolve(result: unknown): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

/**
 * The child's program (run with `node -e`, so it is found the same from the sources and from a
 * build): it runs each call it is sent with pkcs11js and answers with the result or the error.
 * It leaves when its parent disconnects.
 */
const CHILD_PROGRAM = `
const pkcs11js = require(process.argv[1]);
const library = new pkcs11js.PKCS11();
process.on('message', ({ id, method, args }) => {
  let answer;
  try {
    answer = { id, result: library[method](...args) };
  } catch (err) {
    answer = { id, error: { name: err.name, message: err.message, code: err.code, method: err.method } };
  }
  process.send(answer);
});
process.on('disconnect', () => process.exit(0));
`;

/**
 * A PKCS#11 library loaded in a child process of its own, each call answered within a deadline.
 * pkcs11js calls the library synchronously, so a library that hangs would block whichever thread
 * calls it, and a thread blocked in native code cannot be stopped (a worker thread's terminate()
 * waits for it, and so does the process's exit); a process can be killed. A call not answered in
 * time kills the process, which then answers nothing more: its owner starts another.
 */
export class Pkcs11LibraryProcess {
  private readonly child: ChildProcess;
  private readonly pending = new Map<number, PendingCall>();
  private nextId = 0;
  /** Why the process no longer answers, once it does not. */
  private ended?: string;

  /** `deadlines`: longer ones for calls that take long on a sound token (generating an RSA pair). */
  constructor(
    private readonly lib: string,
    private readonly deadlineMs: number,
    private readonly deadlines: Partial<Record<CallName, number>> = {},
  ) {
    // The server's NODE_OPTIONS (an inspector port, heap sizes) are not the child's business.
    const env = { ...process.env };
    delete env.NODE_OPTIONS;
    this.child = spawn(process.execPath, ['-e', CHILD_PROGRAM, require.resolve('pkcs11js')], {
      env,
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      serialization: 'advanced',
    });
    // An idle library's process does not keep the server's running; a pending call's timer does.
    this.child.unref();
    this.child.channel?.unref();
    this.child.on('message', (answer: Answer) => this.settle(answer));
    this.child.on('error', (err) => this.end(`its process could not be started: ${err.message}`));
    this.child.on('exit', (code, signal) => this.end(`its process ended (${signal ?? `exit code ${code}`})`));
  }

  /** Whether the process still answers calls. */
  get running(): boolean {
    return this.ended === undefined;
  }

  /** Runs one call of the library in the child; a library error comes back as pkcs11js threw it. */
  call<M extends CallName>(method: M, ...args: Parameters<Pkcs11Calls[M]>): Promise<ReturnType<Pkcs11Calls[M]>> {
    return new Promise((resolve, reject) => {
      if (this.ended !== undefined) {
        reject(new Error(`the PKCS#11 library ${this.lib} cannot take ${method}: ${this.ended}`));
        return;
      }
      const id = this.nextId++;
      const deadlineMs = this.deadlines[method] ?? this.deadlineMs;
      const timer = setTimeout(() => {
        this.pending.delete(id);
        this.stop(`it did not answer ${method} within ${deadlineMs / 1000} s`);
        reject(new Error(`the PKCS#11 library ${this.lib} did not answer ${method} within ${deadlineMs / 1000} s; its process was stopped, and the next call starts another`));
      }, deadlineMs);
      this.pending.set(id, { method, resolve: resolve as (result: unknown) => void, reject, timer });
      this.child.send({ id, method, args }, (err) => {
        if (err) this.settle({ id, error: { name: err.name, message: `could not be sent to its process: ${err.message}` } });
      });
    });
  }

  /** Kills the process (a library stuck in a call would not notice anything gentler); calls still waiting fail. */
  stop(reason = 'its process was stopped'): void {
    this.end(reason);
    this.child.kill('SIGKILL');
  }

  private settle(answer: Answer): void {
    const call = this.pending.get(answer.id);
    if (!call) return;
    this.pending.delete(answer.id);
    clearTimeout(call.timer);
    if (!answer.error) {
      call.resolve(answer.result);
      return;
    }
    const { name, message, code, method } = answer.error;
    call.reject(name === pkcs11js.Pkcs11Error.name ? new pkcs11js.Pkcs11Error(message, code, method) : new Error(`the PKCS#11 library ${this.lib}: ${call.method}: ${message}`));
  }

  private end(reason: string): void {
    this.ended ??= reason;
    for (const [id, call] of this.pending) {
      this.pending.delete(id);
      clearTimeout(call.timer);
      call.reject(new Error(`the PKCS#11 library ${this.lib} did not finish ${call.method}: ${this.ended}`));
    }
  }
}
