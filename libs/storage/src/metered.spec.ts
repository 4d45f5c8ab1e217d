import { DEFAULT_TELEMETRY, Metrics } from '@svc/metrics';
import { InmemPhysical, MeteredPhysical } from './index';

describe('MeteredPhysical', () => {
  it('times each operation by backend and operation, counting failures, and passes results through', async () => {
    const metrics = new Metrics({ ...DEFAULT_TELEMETRY, disableHostname: true });
    const timer = metrics.timer('storage.operation', 'Storage', ['backend', 'operation']);
    const physical = new MeteredPhysical(new InmemPhysical(), timer);
    await physical.open();
    await physical.put('a/b', Buffer.from('value'));
    expect((await physical.get('a/b'))?.toString()).toBe('value');
    expect(await physical.list('a/')).toEqual(['b']);
    await expect(physical.transaction(() => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    await physical.delete('a/b');

    expect(physical.kind).toBe('inmem');
    for (const operation of ['get', 'put', 'delete', 'list', 'transaction']) expect(timer.series('inmem', operation).count).toBe(1);
    expect(timer.series('inmem', 'transaction').failures).toBe(1);
    expect(timer.series('inmem', 'put').failures).toBe(0);
  });
});
