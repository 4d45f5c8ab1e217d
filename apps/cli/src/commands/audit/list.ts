import type { Command } from '../context';
import { println } from '../context';
import { columns, formatValue, output } from '../format';

interface AuditDevice {
  type: string;
  description: string;
  options: Record<string, string> | null;
  local?: boolean;
}

export const command: Command = {
  args: '',
  summary: 'List the enabled audit devices.',
  flags: { detailed: { kind: 'boolean', description: 'also show options and replication' } },
  async run(ctx, { flags }) {
    const devices = ((await ctx.client.read('sys/audit'))?.data ?? {}) as Record<string, AuditDevice>;
    const sorted = Object.entries(devices).sort(([a], [b]) => a.localeCompare(b));
    if (sorted.length === 0 && ctx.format === 'table') {
      println(ctx.io.stdout, 'No audit devices are enabled.');
      return 2;
    }
    output(ctx, devices, () =>
      flags.detailed
        ? columns(
            ['Path', 'Type', 'Description', 'Replication', 'Options'],
            sorted.map(([path, device]) => [path, device.type, formatValue(device.description), device.local ? 'local' : 'replicated', formatValue(device.options ?? {})]),
          )
        : columns(['Path', 'Type', 'Description'], sorted.map(([path, device]) => [path, device.type, formatValue(device.description)])),
    );
    return 0;
  },
};
