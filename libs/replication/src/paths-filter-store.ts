import { ServiceError } from '@svc/api-contract';
import type { ReplicationHost } from './host';
import { FILTER_PREFIX, type ModeStates } from './mode-state';
import { checkPathsFilter, dynamicFilter } from './paths-filter';
import type { SecondaryLinks } from './secondary-link';
import type { PathsFilter } from './types';

type PathsFilterHost = Pick<ReplicationHost, 'store' | 'mounts' | 'namespaces'>;

/** The paths filters of a performance primary's secondaries, kept by the primary, and as a secondary sees its own. */
export class PathsFilterStore {
  constructor(
    private readonly host: PathsFilterHost,
    private readonly states: ModeStates,
    private readonly links: Pick<SecondaryLinks, 'filter'>,
  ) {}

  async writePathsFilter(id: string, mode: string, paths: unknown[]): Promise<void> {
    await this.states.requirePrimary('performance');
    await this.host.store.putJSON(FILTER_PREFIX + checkFilterId(id), checkPathsFilter(mode, paths));
  }

  async readPathsFilter(id: string): Promise<PathsFilter | null> {
    await this.states.requirePrimary('performance');
    return this.host.store.getJSON<PathsFilter>(FILTER_PREFIX + checkFilterId(id));
  }

  async deletePathsFilter(id: string): Promise<void> {
    await this.states.requirePrimary('performance');
    await this.host.store.delete(FILTER_PREFIX + checkFilterId(id));
  }

  async primaryDynamicFilter(id: string): Promise<ReturnType<typeof dynamicFilter>> {
    return dynamicFilter(await this.readPathsFilter(id), this.host.mounts(), this.namespacePaths());
  }

  /** As the secondary sees it: the filter the primary last reported over the link. */
  async secondaryDynamicFilter(id: string): Promise<ReturnType<typeof dynamicFilter>> {
    const state = await this.states.requireSecondary('performance');
    if (checkFilterId(id) !== state.secondaryId) throw ServiceError.badRequest(`this secondary's id is "${state.secondaryId}", not "${id}"`);
    return dynamicFilter(this.links.filter('performance'), this.host.mounts(), this.namespacePaths());
  }

  private namespacePaths(): string[] {
    return this.host.namespaces().map((namespace) => namespace.path);
  }
}

function checkFilterId(id: string): string {
  if (!/^[A-Za-z0-9_.-]{1,128}$/.test(id)) throw ServiceError.badRequest('id must be 1 to 128 letters, digits, "_", "-" or "."');
  return id;
}
