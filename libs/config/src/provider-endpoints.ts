import { objectsOf } from './blocks';
import { ConfigError } from './errors';
import { Section } from './section';
import type { ProviderEndpoints } from './types';

/** Each endpoint's field in `provider_endpoints { ... }` and the environment variable used when the file leaves it out. */
export const PROVIDER_ENDPOINT_FIELDS: Record<keyof ProviderEndpoints, string> = {
  cloud_sm: 'SVC_PROVIDER_ENDPOINT_CLOUD_SM',
  cloudb_authority: 'SVC_PROVIDER_ENDPOINT_CLOUDB_AUTHORITY',
  cloudc_sm: 'SVC_PROVIDER_ENDPOINT_CLOUDC_SM',
  codehost: 'SVC_PROVIDER_ENDPOINT_CODEHOST',
  webhost: 'SVC_PROVIDER_ENDPOINT_WEBHOST',
};

/**
 * `provider_endpoints { cloud_sm = "https://..." codehost = "https://HOST/api/v3" ... }`: the API
 * base URLs the sync worker calls instead of the providers' public ones (sovereign clouds,
 * enterprise servers, emulators). Each may also come from its SVC_PROVIDER_ENDPOINT_* variable.
 */
export function parseProviderEndpoints(value: unknown, sourceName: string, environment: NodeJS.ProcessEnv, warnings: string[]): ProviderEndpoints {
  const blocks = value === undefined ? [{}] : objectsOf(value);
  if (!blocks || blocks.length !== 1) throw new ConfigError(`${sourceName}: provider_endpoints must be one block such as provider_endpoints { codehost = "https://github.example.com/api/v3" }`);
  const section = new Section(`${sourceName}: provider_endpoints`, blocks[0]);
  const endpoints: ProviderEndpoints = {};
  for (const [field, variable] of Object.entries(PROVIDER_ENDPOINT_FIELDS) as [keyof ProviderEndpoints, string][]) {
    const url = section.string(field) ?? environment[variable];
    if (url === undefined || url === '') continue;
    if (!URL.canParse(url) || !['http:', 'https:'].includes(new URL(url).protocol)) {
      throw section.error(`${field} must be an http(s) URL such as https://api.example.com`);
    }
    endpoints[field] = url;
  }
  section.warnUnknown(warnings);
  return endpoints;
}
