import { Inject, Injectable, Module, type BeforeApplicationShutdown, type DynamicModule, type OnApplicationShutdown, type Provider, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { MicroserviceOptions } from '@nestjs/microservices';
import type { ServerConfig } from '@svc/config';
import { createLoggers, type Loggers } from './logger';
import { connectShared, logConfigWarnings, runGateway, runService, type GatewayOptions, type RunningProcess, type RunningService, type Shared } from './processes';
import { REPLICATION_SERVICE, serviceProcesses } from './service-names';

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
    if (this.shared.primary !== this.shared.bus) await this.shared.primary?.close();
  }
}

/** Configuration, loggers and shared connections of a process named `name`. */
@Module({})
class InfrastructureModule {
  static register(config: ServerConfig, name: string): DynamicModule {
    return {
      module: InfrastructureModule,
      providers: [
        {
          provide: LOGGERS,
          useFactory: (): Loggers => {
            const loggers = createLoggers(config, name);
            logConfigWarnings(config, loggers.logger);
            return loggers;
          },
        },
        { provide: SHARED, useFactory: (loggers: Loggers): Promise<Shared> => connectShared(config, name, loggers.logger), inject: [LOGGERS] },
        SharedConnections,
      ],
      exports: [LOGGERS, SHARED],
    };
  }
}

/**
 * One process: its infrastructure and what `run` builds on it (the gateway or an engine service),
 * with the controllers (and their providers) through which it is reached, if any.
 */
@Module({})
class ProcessModule {
  static register(
    config: ServerConfig,
    name: string,
    run: (loggers: Loggers, shared: Shared) => Promise<RunningProcess>,
    reachedThrough: { controllers: Type[]; providers: Provider[] } = { controllers: [], providers: [] },
  ): DynamicModule {
    return {
      module: ProcessModule,
      imports: [InfrastructureModule.register(config, name)],
      controllers: reachedThrough.controllers,
      providers: [{ provide: PROCESS, useFactory: run, inject: [LOGGERS, SHARED] }, ProcessLifecycle, ...reachedThrough.providers],
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
 * The replication service (distributed topology): a core like a gateway's that owns the cluster's
 * replication (the cluster listener, the log and Merkle index, the link to a primary) while it
 * holds the cluster's replication lease (another one stands by); the gateways send it the calls
 * that need them. Its listener serves the API too (health, metrics),
 * but clients use the gateways, whose address `api_addr` must give: secondaries unwrap their
 * activation tokens there.
 */
export async function startReplicationService(config: ServerConfig): Promise<RunningProcess> {
  if (!config.bus) throw new Error('the replication service needs a bus "nats" stanza in its configuration');
  if (!config.listeners[0]?.clusterAddress) throw new Error('the replication service needs a listener "tcp" stanza with a cluster_address');
  return start(ProcessModule.register(config, REPLICATION_SERVICE, (loggers, shared) => runGateway(config, { distributed: true, replicationOwner: 'lease' }, loggers, shared)));
}

/**
 * An engine service on its own: a Nest microservice whose transport serves its subject on the bus
 * (`BusTransport`), with storage of its own; it holds the keyring only while some gateway is unsealed.
 */
export async function startService(config: ServerConfig, service: string): Promise<RunningProcess> {
  const services = serviceProcesses();
  if (!services.includes(service)) throw new Error(`unknown service "${service}"; expected one of ${services.join(', ')}`);
  if (!config.bus) throw new Error(`service "${service}" needs a bus "nats" stanza in its configuration`);
  // Nest's microservice transport is loaded by the engine service processes only.
  const { BusTransport, ENGINE_HOST, EngineController } = await import('./engine-microservice');
  const module = ProcessModule.register(config, service, (loggers, shared) => runService(config, service, loggers, shared), {
    controllers: [EngineController],
    providers: [{ provide: ENGINE_HOST, useFactory: (running: RunningService) => running.host, inject: [PROCESS] }],
  });
  const transport = new BusTransport(config.bus.subjectPrefix);
  const app = await NestFactory.createMicroservice<MicroserviceOptions>(module, { strategy: transport, logger: false, abortOnError: false });
  transport.connect(app.get<Shared>(SHARED).bus, service);
  await app.listen();
  const running = app.get<RunningProcess>(PROCESS);
  return { ...running, stop: () => app.close() };
}
