import { authCloudLogin } from './auth-cloud';
import { cliKvGetStart, cliStatusStart, cliVersionStart } from './cli-start';
import { cloudScenarios } from './cloud-creds';
import { databaseCreds } from './database-creds';
import { footprintScenario } from './footprint';
import { kvScenarios } from './kv';
import { replicationLag, replicationResync } from './replication';
import { scale } from './scale';
import { devServerStart, embeddedServerFirstStart } from './server-start';
import type { Scenario } from './scenario';
import { snapshotSave, snapshotSaveEmbedded } from './snapshot';
import { syncLag } from './sync-lag';
import { sysMounts } from './sys-mounts';
import { transitBatch, transitEncrypt, transitEncryptDistributed } from './transit';

/** Every scenario, in the order `npm run bench` runs them (BENCH_ONLY picks some by name). */
export const SCENARIOS: Scenario[] = [sysMounts, transitEncrypt, transitEncryptDistributed, transitBatch, ...kvScenarios, databaseCreds, ...cloudScenarios, syncLag, snapshotSave, snapshotSaveEmbedded, replicationLag, replicationResync, authCloudLogin, cliVersionStart, cliStatusStart, cliKvGetStart, devServerStart, embeddedServerFirstStart, scale, footprintScenario];
