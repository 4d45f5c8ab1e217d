import { statfs } from 'node:fs/promises';
import * as os from 'node:os';
import type { PathDeclaration } from '@svc/framework';

/** The filesystem whose usage sys/host-info reports. */
const ROOT_FILESYSTEM = '/';

function percent(part: number, whole: number): number {
  return whole > 0 ? (part / whole) * 100 : 0;
}

/** Usage of the root filesystem, in Vault's field names. */
async function diskUsage(): Promise<Record<string, unknown>> {
  const fs = await statfs(ROOT_FILESYSTEM);
  const total = fs.blocks * fs.bsize;
  const free = fs.bavail * fs.bsize;
  const used = (fs.blocks - fs.bfree) * fs.bsize;
  const inodesUsed = fs.files - fs.ffree;
  return {
    path: ROOT_FILESYSTEM,
    fstype: '',
    total,
    free,
    used,
    usedPercent: percent(used, used + free),
    inodesTotal: fs.files,
    inodesUsed,
    inodesFree: fs.ffree,
    inodesUsedPercent: percent(inodesUsed, fs.files),
  };
}

/** What sys/host-info shows of the machine the answering process runs on (Vault's shape). */
async function hostInfo(): Promise<Record<string, unknown>> {
  const cpus = os.cpus();
  const uptime = Math.floor(os.uptime());
  const total = os.totalmem();
  const available = os.freemem();
  return {
    cpu: cpus.map((cpu, index) => ({ cpu: index, modelName: cpu.model, mhz: cpu.speed, cores: 1 })),
    cpu_times: cpus.map((cpu, index) => ({
      cpu: `cpu${index}`,
      // os.cpus() counts milliseconds; Vault reports seconds.
      user: cpu.times.user / 1000,
      system: cpu.times.sys / 1000,
      idle: cpu.times.idle / 1000,
      nice: cpu.times.nice / 1000,
      irq: cpu.times.irq / 1000,
    })),
    disk: [await diskUsage()],
    host: {
      hostname: os.hostname(),
      uptime,
      bootTime: Math.floor(Date.now() / 1000) - uptime,
      os: os.platform(),
      platformVersion: os.version(),
      kernelVersion: os.release(),
      kernelArch: os.machine(),
    },
    memory: { total, available, free: available, used: total - available, usedPercent: percent(total - available, total) },
    timestamp: new Date().toISOString(),
  };
}

/** sys/host-info: the gateway's host, for operators (sudo), as Vault serves it. */
export function hostInfoPaths(): PathDeclaration[] {
  return [
    {
      pattern: 'host-info',
      synopsis: 'Information about the host the answering server runs on: CPU, disk, host, memory.',
      operations: { read: { summary: 'Read host information.', sudo: true, handler: async () => ({ data: await hostInfo() }) } },
    },
  ];
}
