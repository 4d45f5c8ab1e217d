import type { MountInfo } from '@svc/framework';

/** sys/ is served before the mount table can be read (sealed), so its mount info is fixed. */
export const SYSTEM_MOUNT: MountInfo = {
  path: 'sys/',
  type: 'system',
  uuid: 'system',
  accessor: 'system',
  namespace: '',
  description: 'system endpoints used for control, policy and debugging',
  config: { default_lease_ttl: 0, max_lease_ttl: 0 },
  options: {},
  local: false,
  seal_wrap: false,
};
