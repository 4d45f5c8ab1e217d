import { MountedBackend, refusal } from '@svc/testing';
import { cloudAuthBackendFactory } from './backend';
import { ACCESS_LIST, DENY_LIST, type AccessListEntry } from './records';
import { createRoleTag, verifyRoleTag } from './role-tags';

const HOUR_MS = 3600_000;

function entry(expiredHoursAgo: number): AccessListEntry {
  const expiration = new Date(Date.now() - expiredHoursAgo * HOUR_MS).toISOString();
  return { role: 'r', client_nonce: 'n', creation_time: expiration, expiration_time: expiration, last_updated_time: expiration, pending_time: expiration, disallow_reauthentication: false };
}

describe('tidy of the access and deny lists', () => {
  it('the periodic tidy removes entries expired beyond the safety buffer (72h by default), and skips a list whose tidy is disabled', async () => {
    const mounted = MountedBackend.create(cloudAuthBackendFactory, 'cloud');
    await ACCESS_LIST.put(mounted.storage, 'i-old', entry(73));
    await ACCESS_LIST.put(mounted.storage, 'i-recent', entry(71));
    await DENY_LIST.put(mounted.storage, 'old-tag', { creation_time: '', expiration_time: entry(100).expiration_time });
    await mounted.write('config/tidy/roletag-denylist', { disable_periodic_tidy: true });
    await mounted.periodic();
    expect(await mounted.list('identity-accesslist/')).toEqual(['i-recent']);
    expect(await DENY_LIST.list(mounted.storage)).toEqual(['old-tag']);

    await mounted.write('config/tidy/roletag-denylist', { disable_periodic_tidy: false, safety_buffer: '1h' });
    await mounted.write('config/tidy/identity-accesslist', { safety_buffer: '1h' });
    await mounted.periodic();
    expect(await mounted.list('identity-accesslist/')).toEqual([]);
    expect(await DENY_LIST.list(mounted.storage)).toEqual([]);
  });

  it('the manual tidy takes its own safety buffer and says how many entries it removed', async () => {
    const mounted = MountedBackend.create(cloudAuthBackendFactory, 'cloud');
    await ACCESS_LIST.put(mounted.storage, 'i-old', entry(2));
    expect(await mounted.write('tidy/identity-accesslist', { safety_buffer: '3h' })).toEqual({ entries_removed: 0 });
    expect(await mounted.write('tidy/identity-whitelist', { safety_buffer: '1h' })).toEqual({ entries_removed: 1 });
    expect(await refusal(mounted.write('tidy/identity-accesslist', { safety_buffer: 'later' }))).toMatchObject({ status: 400, message: expect.stringContaining('safety_buffer') });
  });
});

describe('role tags', () => {
  const role = { hmac_key: Buffer.alloc(32, 7).toString('base64') } as Parameters<typeof createRoleTag>[0];
  const settings = { role: 'web', policies: ['a', 'b'], maxTtl: 600, instanceId: 'i-1', allowInstanceMigration: false, disallowReauthentication: true };

  it('round-trips its settings under the role key', () => {
    const value = createRoleTag(role, settings);
    expect(value).toMatch(/^v1:[\w-]+:r=web:d=true:m=false:p=a,b:t=600:i=i-1:[A-Za-z0-9+/=]+$/);
    expect(verifyRoleTag(role, value)).toEqual(settings);
  });

  it('refuses a tag whose settings were changed, or made with another key', () => {
    const value = createRoleTag(role, settings);
    expect(() => verifyRoleTag(role, value.replace('p=a,b', 'p=a,b,root'))).toThrow('role tag signature verification failed');
    expect(() => verifyRoleTag({ ...role, hmac_key: Buffer.alloc(32, 8).toString('base64') }, value)).toThrow('role tag signature verification failed');
  });
});
