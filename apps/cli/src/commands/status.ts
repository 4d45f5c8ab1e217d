import type { SealStatus } from '@svc/sdk';
import type { Command } from './context';
import { keyValueTable, output, Row } from './format';

export const SEALED_EXIT_CODE = 2;

export function sealStatusRows(status: SealStatus): Row[] {
  const rows: Row[] = [
    ['Seal Type', status.type],
    ['Initialized', status.initialized],
    ['Sealed', status.sealed],
    ['Total Shares', status.n],
    ['Threshold', status.t],
  ];
  if (status.sealed) {
    rows.push(['Unseal Progress', `${status.progress}/${status.t}`], ['Unseal Nonce', status.nonce || 'n/a']);
  }
  if (status.migration) rows.push(['Seal Migration in Progress', true]);
  rows.push(['Version', status.version]);
  if (status.storage_type) rows.push(['Storage Type', status.storage_type]);
  if (status.cluster_name) rows.push(['Cluster Name', status.cluster_name]);
  if (status.cluster_id) rows.push(['Cluster ID', status.cluster_id]);
  if (status.replication_performance_mode) rows.push(['Replication Performance Mode', status.replication_performance_mode]);
  if (status.replication_dr_mode) rows.push(['Replication DR Mode', status.replication_dr_mode]);
  return rows;
}

export const command: Command = {
  args: '',
  summary: 'Print the seal status. Exit code 0: unsealed, 1: error, 2: sealed.',
  flags: {},
  apiErrorExitCode: 1,
  async run(ctx) {
    const status = await ctx.client.sys.sealStatus();
    output(ctx, status, () => keyValueTable(sealStatusRows(status)));
    return status.sealed ? SEALED_EXIT_CODE : 0;
  },
};
