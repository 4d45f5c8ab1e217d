import { Inject, Injectable, Module, type BeforeApplicationShutdown, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { ServerConfig } from '@svc/config';
import { createLoggers, type Loggers } from './logger';
import { connectShared, runGateway, runService, type GatewayOptions, type RunningProcess, type Shared } from './processes';
import { engineTypes } from './engines';

/**
 * Every process is a NestJS application context: the modules below wire the loggers, the shared connections (bus, locks) and the process itself (gateway or engine service)
 * as providers, and Nest's lifecycle stops them in order: the process first, then the connections
 * it used. Nest stays off the request path; the gateway's HTTP front is a plain node:http server.
 */
const LOGGERS = Symbol('loggers');
const SHARED = Symbol('shared connections');
const PROCESS = Symbol('process');

/** Stops the process before the connections close (Nest runs this hook before the next). */
@Injectable()
class ProcessLifecycle implements BeforeApplicationShutdown {
  constructor(@Inject(PROCESS) private readonly running: RunningProcess) {}

  beforeApplicationShutdown(): Promise<void> {
    return this.running.stop();
  }
}

@Injectable()
class SharedConnections implements OnApplicationShutdown {
  constructor(@Inject(SHARED) private readonly shared: Shared) {}

  async onApplicationShutdown(): Promise<void> {
    await this.shared.bus.close();
    await this.shared.locks.close();
  }
}

/** Configuration, loggers and shared connections of a process named `name`. */
@Module({})
class InfrastructureModule {
  static register(config: ServerConfig, name: string): DynamicModule {
    return {
      module: InfrastructureModule,
      providers: [
        { provide: LOGGERS, useFactory: (): Loggers => createLoggers(config, name) },
        { provide: SHARED, useFactory: (loggers: Loggers): Promise<Shared> => connectShared(config, name, loggers.logger), inject: [LOGGERS] },
        SharedConnections,
      ],
      exports: [LOGGERS, SHARED],
    };
  }
}

/** One process: its infrastructure and what `run` builds on it (the gateway or an engine service). */
@Module({})
class ProcessModule {
  static register(config: ServerConfig, name: string, run: (loggers: Loggers, shared: Shared) => Promise<RunningProcess>): DynamicModule {
    return {
      module: ProcessModule,
      imports: [InfrastructureModule.register(config, name)],
      providers: [{ provide: PROCESS, useFactory: run, inject: [LOGGERS, SHARED] }, ProcessLifecycle],
    };
  }
}

async function start(module: DynamicModule): Promise<RunningProcess> {
  const app = await NestFactory.createApplicationContext(module, { logger: false, abortOnError: false });
  const running = app.get<RunningProcess>(PROCESS);
  return { ...running, stop: () => app.close() };
}

/**
 * The gateway: HTTP listeners, the core, and (all-in-one) the engine services in the same process,
 * reached without serialization. `distributed` leaves the services to their own processes.
 */
export async function startGateway(config: ServerConfig, options: GatewayOptions): Promise<RunningProcess> {
  if (config.listeners.length === 0) throw new Error('the gateway needs at least one listener "tcp" stanza in its configuration');
  return start(ProcessModule.register(config, 'gateway', (loggers, shared) => runGateway(config, options, loggers, shared)));
}

/**
 * An engine service on its own: it serves its subject on the bus with storage of its own, and
 * holds the keyring only while some gateway is unsealed.
 */
export async function startService(config: ServerConfig, service: string): Promise<RunningProcess> {
  const services = engineTypes.services();
  if (!services.includes(service)) throw new Error(`unknown service "${service}"; expected one of ${services.join(', ')}`);
  if (!config.bus) throw new Error(`service "${service}" needs a bus "nats" stanza in its configuration`);
  return start(ProcessModule.register(config, service, (loggers, shared) => runService(config, service, loggers, shared)));
}
