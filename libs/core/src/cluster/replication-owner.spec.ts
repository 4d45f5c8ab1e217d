import { MemoryBus } from '@svc/bus';
import { ServiceError } from '@svc/api-contract';
import { replicationOwnerClient, serveReplicationOwnerCalls } from './replication-owner';

describe('calls to the owner of the replication', () => {
  it('carries the call and its arguments there, and its result or ServiceError back', async () => {
    const bus = new MemoryBus();
    const received: unknown[] = [];
    const subscription = serveReplicationOwnerCalls(bus, 'svc', async (call, args) => {
      received.push([call, args]);
      if (call === 'promote') throw ServiceError.badRequest('the primary is still reachable');
      if (call === 'disablePrimary') throw new Error('a secret in an unexpected message');
      return call === 'status' ? { mode: 'primary' } : undefined;
    });
    const send = replicationOwnerClient(bus, 'svc');
    await expect(send('status', ['performance'])).resolves.toEqual({ mode: 'primary' });
    await expect(send('demotePrimary', ['dr'])).resolves.toBeNull();
    await expect(send('promote', ['dr', '', false])).rejects.toMatchObject({ kind: 'bad-request', errors: ['the primary is still reachable'] });
    await expect(send('disablePrimary', ['dr'])).rejects.toMatchObject({ kind: 'internal', errors: ['internal error'] });
    expect(received[0]).toEqual(['status', ['performance']]);
    subscription.unsubscribe();
  });

  it('answers 503 naming the replication service when no process owns it', async () => {
    const send = replicationOwnerClient(new MemoryBus(), 'svc');
    await expect(send('enablePrimary', ['performance', ''])).rejects.toMatchObject({ kind: 'unavailable', message: expect.stringContaining('replication service') });
  });
});
