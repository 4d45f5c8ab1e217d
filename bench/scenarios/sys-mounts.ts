import { measure, startDevServer, startFloor } from '../run';
import type { Scenario } from './scenario';

/** Authenticated GET /v1/sys/mounts through the gateway, beside a bare node:http mount table. */
export const sysMounts: Scenario = {
  name: 'sys-mounts-read',
  async run() {
    const server = await startDevServer();
    const floor = await startFloor('mounts-floor');
    try {
      const headers = { 'x-service-token': server.token };
      const target = await measure({ url: server.url, method: 'GET', path: '/v1/sys/mounts', headers, pids: server.pids });
      const base = await measure({ url: floor.url, method: 'GET', path: '/v1/sys/mounts', headers, pids: [floor.pid] });
      return { name: this.name, target, floor: base, ratio: target.reqPerSec / base.reqPerSec };
    } finally {
      floor.stop();
      await server.stop();
    }
  },
};
