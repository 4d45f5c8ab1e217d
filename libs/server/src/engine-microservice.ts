import { Controller, Inject } from '@nestjs/common';
import { BaseRpcContext, MessagePattern, Payload, Server, type CustomTransportStrategy, type MessageHandler } from '@nestjs/microservices';
import { isObservable, lastValueFrom } from 'rxjs';
import { decodeJson, encodeJson, type Bus, type Subscription } from '@svc/bus';
import { servicePresenceSubject, serviceQueue, serviceSubject, type EngineHost, type EngineReply, type EngineRequest } from '@svc/engine-host';

/** The one message pattern of an engine service: an engine request, answered with an engine reply. */
export const ENGINE_REQUEST = 'engine.request';
export const ENGINE_HOST = Symbol('engine host');

/** Hands every engine request to the service's engine host. */
@Controller()
export class EngineController {
  constructor(@Inject(ENGINE_HOST) private readonly host: EngineHost) {}

  @MessagePattern(ENGINE_REQUEST)
  handle(@Payload() message: EngineRequest): Promise<EngineReply> {
    return this.host.handle(message);
  }
}

/**
 * Nest's transport for engine services over the project's bus: the service's request subject,
 * load-balanced in its queue group across replicas, goes to the `ENGINE_REQUEST` handler; the
 * presence subject is answered with nothing by every live replica. The bus keeps what it does for
 * every message (batching per event-loop turn, authentication with the cluster key).
 */
export class BusTransport extends Server implements CustomTransportStrategy {
  private subscriptions: Subscription[] = [];
  private connection?: { bus: Bus; service: string };

  constructor(private readonly subjectPrefix?: string) {
    super();
  }

  /** The bus is one of the process's providers, so it is handed over once the application exists. */
  connect(bus: Bus, service: string): void {
    this.connection = { bus, service };
  }

  listen(callback: () => void): void {
    const handler = this.getHandlerByPattern(ENGINE_REQUEST);
    if (!handler || !this.connection) throw new Error('the bus transport needs its bus and an engine request handler before it listens');
    const { bus, service } = this.connection;
    const subject = serviceSubject(service, this.subjectPrefix);
    const queue = serviceQueue(service, this.subjectPrefix);
    this.subscriptions = [
      bus.serve(subject, queue, async (msg) => ({
        payload: encodeJson(await this.answer(handler, decodeJson<EngineRequest>(msg.payload), subject)),
        headers: {},
      })),
      bus.serve(servicePresenceSubject(service, this.subjectPrefix), queue, async () => ({ payload: new Uint8Array(), headers: {} })),
    ];
    callback();
  }

  close(): void {
    for (const subscription of this.subscriptions) subscription.unsubscribe();
    this.subscriptions = [];
  }

  /** Engine services receive requests only; there are no transport events to listen to. */
  on(): never {
    throw new Error('the bus transport has no events');
  }

  unwrap<T>(): T {
    return this.connection?.bus as T;
  }

  /**
   * The handler is Nest's: the controller method behind its pipes, guards, interceptors and
   * exception filters. An engine request has exactly one answer, so it is awaited directly rather
   * than through the base class's reply stream (an Observable and a tick per reply).
   */
  private async answer(handler: MessageHandler, message: EngineRequest, subject: string): Promise<EngineReply> {
    const result: unknown = await handler(message, new BaseRpcContext([subject]));
    return (isObservable(result) ? await lastValueFrom(result) : result) as EngineReply;
  }
}
