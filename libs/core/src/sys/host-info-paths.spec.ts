import { statfs } from 'node:fs/promises';
import * as os from 'node:os';
import { Backend } from '@svc/framework';
import { MountedBackend, mountStorage, refusal, testMount } from '@svc/testing';
import { hostInfoPaths } from './host-info-paths';

describe('sys/host-info', () => {
  let hostInfo: MountedBackend;

  beforeEach(() => {
    const mount = testMount('system', { path: 'sys/' });
    hostInfo = new MountedBackend(new Backend({ type: 'system', help: 'Host information.', paths: hostInfoPaths() }), mount, mountStorage(mount));
  });

  it("shows this machine's CPUs, root filesystem, host and memory in Vault's field names", async () => {
    const before = Math.floor(Date.now() / 1000);
    const cpusBefore = os.cpus();
    const info = (await hostInfo.read('host-info'))!;
    const cpus = os.cpus();

    expect(Object.keys(info).sort()).toEqual(['cpu', 'cpu_times', 'disk', 'host', 'memory', 'timestamp']);
    expect(info.cpu).toEqual(cpus.map((cpu, index) => ({ cpu: index, modelName: cpu.model, mhz: expect.any(Number), cores: 1 })));
    expect(info.cpu_times).toHaveLength(cpus.length);
    expect(info.cpu_times[0]).toEqual({ cpu: 'cpu0', user: expect.any(Number), system: expect.any(Number), idle: expect.any(Number), nice: expect.any(Number), irq: expect.any(Number) });
    // os.cpus() counts milliseconds; Vault's cpu_times are seconds.
    expect(info.cpu_times[0].idle).toBeGreaterThanOrEqual(cpusBefore[0].times.idle / 1000);
    expect(info.cpu_times[0].idle).toBeLessThanOrEqual(cpus[0].times.idle / 1000);

    expect(info.host).toEqual({
      hostname: os.hostname(),
      uptime: expect.any(Number),
      bootTime: expect.any(Number),
      os: os.platform(),
      platformVersion: os.version(),
      kernelVersion: os.release(),
      kernelArch: os.machine(),
    });
    expect(info.host.bootTime + info.host.uptime).toBeGreaterThanOrEqual(before);

    const fs = await statfs('/');
    const [disk] = info.disk;
    expect(info.disk).toHaveLength(1);
    expect(disk).toMatchObject({ path: '/', fstype: '', total: fs.blocks * fs.bsize, inodesTotal: fs.files });
    expect(disk.usedPercent).toBeCloseTo((disk.used / (disk.used + disk.free)) * 100, 6);

    expect(info.memory.total).toBe(os.totalmem());
    expect(info.memory.used).toBe(info.memory.total - info.memory.available);
    expect(info.memory.free).toBe(info.memory.available);
    expect(info.memory.usedPercent).toBeCloseTo((info.memory.used / info.memory.total) * 100, 6);
    expect(Date.parse(info.timestamp)).toBeGreaterThanOrEqual(before * 1000);
  });

  it('is a read that needs sudo, and nothing else', async () => {
    expect(hostInfo.backend.operationInfo('host-info', 'read')).toMatchObject({ sudo: true, unauthenticated: false });
    expect(await refusal(hostInfo.write('host-info'))).toEqual({ status: 405, message: 'unsupported operation' });
  });
});
