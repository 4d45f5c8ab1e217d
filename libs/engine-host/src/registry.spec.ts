import { Backend } from '@svc/framework';
import { EngineRegistry, GATEWAY, type EngineType } from './registry';

const factory = () => new Backend({ type: 'test', help: '', paths: [] });
const kv: EngineType = { type: 'kv', table: 'secret', runsIn: GATEWAY, factory, variants: { 'kv-v2': { version: '2' } } };
const cloud: EngineType = { type: 'cloud', table: 'secret', runsIn: 'cloud', factory, aliases: ['aws'] };
const cloudAuth: EngineType = { type: 'cloud', table: 'auth', runsIn: 'auth-cloud', factory, aliases: ['aws'] };

describe('EngineRegistry', () => {
  const registry = new EngineRegistry([kv, cloud, cloudAuth]);

  it('finds a type by its name or an alias in its table, and a mount of an alias by its type', () => {
    expect(registry.get('cloud', 'secret')).toBe(cloud);
    expect(registry.get('aws', 'secret')).toBe(cloud);
    expect(registry.get('aws', 'auth')).toBe(cloudAuth);
    expect(registry.forMount({ type: 'aws', table: 'auth' })).toBe(cloudAuth);
    expect(registry.get('kv', 'auth')).toBeUndefined();
  });

  it("enables a variant's name as its type with the variant's options, an alias under the alias", () => {
    expect(registry.enabling('kv-v2', 'secret')).toEqual({ engine: kv, type: 'kv', options: { version: '2' } });
    expect(registry.enabling('aws', 'auth')).toEqual({ engine: cloudAuth, type: 'aws', options: {} });
    expect(registry.enabling('kv', 'secret')).toEqual({ engine: kv, type: 'kv', options: {} });
    expect(registry.enabling('kv-v2', 'auth')).toBeUndefined();
    // A variant names how a mount is made, never a mount's type.
    expect(registry.get('kv-v2', 'secret')).toBeUndefined();
  });

  it('lists aliases as mountable and hosts them with the same factory', () => {
    expect(registry.mountable('secret')).toEqual(['aws', 'cloud', 'kv']);
    expect(Object.keys(registry.factoriesFor('cloud')).sort()).toEqual(['aws', 'cloud']);
    expect(registry.factoriesFor('cloud').aws).toBe(factory);
  });

  it('refuses a name registered twice, alias or not', () => {
    expect(() => new EngineRegistry([kv, { ...cloud, aliases: ['kv'] }])).toThrow('secret type "kv" is registered twice');
    expect(() => new EngineRegistry([cloud, { ...kv, type: 'aws', variants: undefined }])).toThrow('secret type "aws" is registered twice');
  });
});
