import { nextRotation, rotationDue } from './schedule';
import { leaseLimits, SYSTEM_LEASE_TTL } from './ttl';

describe('rotation schedule', () => {
  const at = (iso: string) => new Date(iso);

  it('a period counts from the last rotation', () => {
    expect(nextRotation({ rotation_period: 90 }, at('2030-01-01T00:00:00Z')).toISOString()).toBe('2030-01-01T00:01:30.000Z');
  });

  it('a cron schedule gives the next matching time in UTC', () => {
    expect(nextRotation({ rotation_schedule: '30 2 * * 1' }, at('2030-01-01T00:00:00Z')).toISOString()).toBe('2030-01-07T02:30:00.000Z');
  });

  it('a scheduled rotation past its window is missed and waits for the next', () => {
    const role = { rotation_schedule: '0 0 * * *', rotation_window: 3600, next_rotation: '2030-01-02T00:00:00.000Z' };
    expect(rotationDue(role, at('2030-01-01T23:59:00Z'))).toBe('wait');
    expect(rotationDue(role, at('2030-01-02T00:30:00Z'))).toBe('rotate');
    expect(rotationDue(role, at('2030-01-02T01:00:01Z'))).toBe('missed');
    expect(rotationDue({ ...role, rotation_window: undefined }, at('2030-01-05T00:00:00Z'))).toBe('rotate');
  });
});

describe('lease TTLs', () => {
  it('fall back to the mount and then the system, and never exceed the mount maximum', () => {
    expect(leaseLimits({ default_ttl: 0, max_ttl: 0 }, { config: { default_lease_ttl: 0, max_lease_ttl: 0 } })).toEqual({ ttl: SYSTEM_LEASE_TTL, maxTtl: SYSTEM_LEASE_TTL });
    expect(leaseLimits({ default_ttl: 0, max_ttl: 0 }, { config: { default_lease_ttl: 60, max_lease_ttl: 120 } })).toEqual({ ttl: 60, maxTtl: 120 });
    expect(leaseLimits({ default_ttl: 600, max_ttl: 9000 }, { config: { default_lease_ttl: 60, max_lease_ttl: 300 } })).toEqual({ ttl: 300, maxTtl: 300 });
    expect(leaseLimits({ default_ttl: 30, max_ttl: 90 }, { config: { default_lease_ttl: 60, max_lease_ttl: 300 } })).toEqual({ ttl: 30, maxTtl: 90 });
  });
});
