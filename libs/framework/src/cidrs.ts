import { BlockList, isIP } from 'node:net';
import { ServiceError } from '@svc/api-contract';

/** IPv4 clients reached over an IPv6 socket show as `::ffff:a.b.c.d`; CIDR checks want the IPv4 form. */
const IPV4_MAPPED = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i;

/**
 * Checks a list of CIDR blocks (a bare address is its own /32 or /128) for a field, so a typo is a
 * 400 naming the field when the role is written rather than a login refused later.
 */
export function validateCidrs(field: string, cidrs: readonly string[]): string[] {
  return cidrs.map((value) => value.trim()).filter(Boolean).map((cidr) => {
    const [address, prefix, extra] = cidr.split('/');
    const family = isIP(address);
    const bits = prefix === undefined ? (family === 6 ? 128 : 32) : Number(prefix);
    const valid = family !== 0 && extra === undefined && Number.isInteger(bits) && bits >= 0 && bits <= (family === 6 ? 128 : 32) && prefix !== '';
    if (!valid) throw ServiceError.badRequest(`field "${field}": "${cidr}" is not a CIDR block or IP address`);
    return cidr;
  });
}

/** Whether `address` falls in one of `cidrs` (valid blocks, see validateCidrs); an empty list allows any address. */
export function addressAllowed(cidrs: readonly string[], address: string | undefined): boolean {
  if (cidrs.length === 0) return true;
  if (!address) return false;
  const client = address.replace(IPV4_MAPPED, '$1');
  const family = isIP(client);
  if (family === 0) return false;
  const blocks = new BlockList();
  for (const cidr of cidrs) {
    const [block, prefix] = cidr.split('/');
    const type = isIP(block) === 6 ? 'ipv6' : 'ipv4';
    blocks.addSubnet(block, prefix === undefined ? (type === 'ipv6' ? 128 : 32) : Number(prefix), type);
  }
  return blocks.check(client, family === 6 ? 'ipv6' : 'ipv4');
}
