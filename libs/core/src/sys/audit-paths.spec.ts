import { createHmac } from 'node:crypto';
import { Backend } from '@svc/framework';
import { MountedBackend, mountStorage, refusal, testMount } from '@svc/testing';
import pino from 'pino';
import { AuditDevices } from '../audit/audit-devices';
import { auditPaths } from './audit-paths';

describe('sys/audit', () => {
  let audit: AuditDevices;
  let sys: MountedBackend;

  beforeEach(() => {
    const mount = testMount('system', { path: 'sys/' });
    const storage = mountStorage(mount);
    // The real device table: its devices write to "discard", so no file is opened.
    audit = new AuditDevices(storage, pino({ level: 'silent' }));
    sys = new MountedBackend(new Backend({ type: 'system', help: 'sys/audit', paths: auditPaths({ audit }) }), mount, storage);
  });

  afterEach(() => audit.close());

  it('enables a device, lists it, hashes with its key and disables it', async () => {
    const enabled = await sys.request('update', 'audit/file', { type: 'file', description: 'compliance', options: { file_path: 'discard' }, local: true });
    expect(enabled).toBeUndefined();
    expect(await sys.read('audit')).toEqual({
      'file/': { type: 'file', description: 'compliance', options: { file_path: 'discard' }, local: true, path: 'file/' },
    });

    // The HMAC the device writes to its log for that value: keyed with the device's own salt.
    const [{ salt }] = audit.list();
    const expected = `hmac-sha256:${createHmac('sha256', Buffer.from(salt, 'base64')).update('s3cret').digest('hex')}`;
    expect(await sys.write('audit-hash/file', { input: 's3cret' })).toEqual({ hash: expected });

    expect(await sys.request('delete', 'audit/file')).toBeUndefined();
    expect(await sys.read('audit')).toEqual({});
  });

  it('refuses devices of unknown types, without a type, or at a path in use', async () => {
    expect(await refusal(sys.write('audit/syslog', { type: 'syslog' }))).toEqual({ status: 400, message: 'field "type": "syslog" is not one of: file' });
    expect(await refusal(sys.write('audit/file', { options: { file_path: 'discard' } }))).toEqual({ status: 400, message: 'missing required field "type"' });

    await sys.write('audit/file', { type: 'file', options: { file_path: 'discard' } });
    expect(await refusal(sys.write('audit/file', { type: 'file', options: { file_path: 'discard' } }))).toEqual({ status: 400, message: 'path "file/" is already in use' });
    expect(Object.keys((await sys.read('audit')) ?? {})).toEqual(['file/']);
  });

  it('refuses to hash without input or with a device that is not enabled', async () => {
    await sys.write('audit/file', { type: 'file', options: { file_path: 'discard' } });
    expect(await refusal(sys.write('audit-hash/file', {}))).toEqual({ status: 400, message: 'missing required field "input"' });
    expect(await refusal(sys.write('audit-hash/other', { input: 'x' }))).toEqual({ status: 400, message: 'unknown audit device "other"' });
  });
});
