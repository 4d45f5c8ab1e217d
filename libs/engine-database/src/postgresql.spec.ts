import 'reflect-metadata';
import { X509Certificate, createPublicKey, createPrivateKey, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { postgresLoginWorks, postgresRole, scramAccepts, withPostgres } from '@svc/testing';
import { DatabaseHarness, POSTGRES_URL, unique } from './testing/harness';

/** A self-signed CA for client_certificate roles. */
async function testCa(): Promise<{ cert: string; key: string }> {
  const keys = await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: 'CN=svc test CA',
    keys,
    signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
    extensions: [new x509.BasicConstraintsExtension(true, undefined, true)],
  });
  const der = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey);
  return { cert: cert.toString('pem'), key: createPrivateKey({ key: Buffer.from(der), format: 'der', type: 'pkcs8' }).export({ type: 'pkcs8', format: 'pem' }).toString() };
}

const CREATE = `CREATE ROLE "{{name}}" WITH LOGIN PASSWORD '{{password}}' VALID UNTIL '{{expiration}}'`;

describe('postgresql-database-plugin', () => {
  let harness: DatabaseHarness;
  const db = 'pg';
  const createdRoles: string[] = [];

  beforeEach(async () => {
    harness = new DatabaseHarness();
    const written = await harness.call('update', `config/${db}`, {
      plugin_name: 'postgresql-database-plugin',
      connection_url: POSTGRES_URL,
      username: 'postgres',
      password: 'root-secret-pw',
      allowed_roles: '*',
    });
    expect(written.status).toBe(204);
  });

  afterEach(async () => {
    await harness.backend.cleanup();
    await withPostgres(async (client) => {
      for (const role of createdRoles.splice(0)) await client.query(`DROP ROLE IF EXISTS "${role}"`);
    });
  });

  it('reads a connection without its password and lists it', async () => {
    const read = await harness.call('read', `config/${db}`);
    expect(read.data).toMatchObject({
      plugin_name: 'postgresql-database-plugin',
      plugin_version: 'v1.0.0+builtin.svc',
      allowed_roles: ['*'],
      connection_details: { connection_url: POSTGRES_URL, username: 'postgres', max_open_connections: 4 },
      password_policy: '',
      root_credentials_rotate_statements: [],
      verify_connection: true,
    });
    expect(JSON.stringify(read.data)).not.toContain('root-secret-pw');
    expect((await harness.call('list', 'config/')).data).toEqual({ keys: [db] });
  });

  it('issues a user that can log in until the lease is revoked', async () => {
    await harness.call('update', 'roles/app', { db_name: db, creation_statements: CREATE, default_ttl: '1h', max_ttl: '2h' });
    const creds = await harness.call('read', 'creds/app');
    expect(creds.status).toBe(200);
    const { username, password } = creds.data as { username: string; password: string };
    createdRoles.push(username);
    expect(username).toMatch(/^v-token-app-[A-Za-z0-9]{20}-\d+$/);
    expect(password).toMatch(/^[A-Za-z0-9-]{20}$/);
    expect(creds.secret).toMatchObject({ type: 'creds', ttl: 3600, maxTtl: 7200, renewable: true });
    expect(JSON.stringify(creds.secret?.internalData)).not.toContain(password);

    expect(await postgresLoginWorks(username, password)).toBe(true);
    expect(await postgresLoginWorks(username, 'wrong-password')).toBe(false);
    const role = await postgresRole(username);
    expect(Math.abs(role!.validUntil!.getTime() - (Date.now() + 3600_000))).toBeLessThan(60_000);

    expect((await harness.revoke(creds.secret!.internalData)).status).toBe(204);
    expect(await postgresRole(username)).toBeNull();
    expect(await postgresLoginWorks(username, password)).toBe(false);
    // Revoking again (expiry after a manual revoke) finds nothing to do.
    expect((await harness.revoke(creds.secret!.internalData)).status).toBe(204);
  });

  it('renewal moves VALID UNTIL, and stops at max_ttl', async () => {
    await harness.call('update', 'roles/renewable', { db_name: db, creation_statements: [CREATE], default_ttl: 60, max_ttl: 600 });
    const creds = await harness.call('read', 'creds/renewable');
    const username = (creds.data as { username: string }).username;
    createdRoles.push(username);
    const before = (await postgresRole(username))!.validUntil!.getTime();

    const renewed = await harness.renew(creds.secret!.internalData, { increment: 300 });
    expect(renewed.status).toBe(204);
    expect(renewed.secret).toMatchObject({ type: 'creds', ttl: 300, renewable: true });
    const after = (await postgresRole(username))!.validUntil!.getTime();
    expect(after - before).toBeGreaterThan(200_000);

    const capped = await harness.renew(creds.secret!.internalData, { increment: 100_000 });
    expect(capped.secret!.ttl).toBeLessThanOrEqual(600);
    expect(capped.secret!.ttl).toBeGreaterThan(590);
    await harness.revoke(creds.secret!.internalData);
  });

  it('clamps TTLs to the mount maximum', async () => {
    const tuned = new DatabaseHarness(harness.mount, harness.storage);
    tuned.mount.config = { default_lease_ttl: 120, max_lease_ttl: 300 };
    await tuned.call('update', 'roles/clamped', { db_name: db, creation_statements: CREATE, max_ttl: '10h' });
    const creds = await tuned.call('read', 'creds/clamped');
    createdRoles.push((creds.data as { username: string }).username);
    expect(creds.secret).toMatchObject({ ttl: 120, maxTtl: 300 });
    await tuned.revoke(creds.secret!.internalData);
    await tuned.backend.cleanup();
  });

  it('bad SQL gives 502 with the database message and leaves no user behind', async () => {
    const marker = unique('pgbad');
    await harness.call('update', 'roles/broken', {
      db_name: db,
      creation_statements: [`CREATE ROLE "{{name}}" LOGIN PASSWORD '{{password}}'; COMMENT ON ROLE "{{name}}" IS '${marker}'; SELEKT nonsense`],
    });
    const creds = await harness.call('read', 'creds/broken');
    expect(creds.status).toBe(502);
    expect(creds.errors![0]).toMatch(/create user failed: .*syntax error at or near "SELEKT"/);
    const leftovers = await withPostgres((client) =>
      client.query(`SELECT 1 FROM pg_authid WHERE shobj_description(oid, 'pg_authid') = $1`, [marker]),
    );
    expect(leftovers.rowCount).toBe(0);
  });

  it('enforces allowed_roles and refuses unknown connections', async () => {
    await harness.call('update', `config/${db}`, { allowed_roles: 'only-this' });
    await harness.call('update', 'roles/other', { db_name: db, creation_statements: CREATE });
    const refused = await harness.call('read', 'creds/other');
    expect(refused).toMatchObject({ status: 400, errors: [`role "other" is not in the allowed_roles of connection "${db}"`] });

    const unknown = await harness.call('update', 'roles/nowhere', { db_name: 'missing', creation_statements: CREATE });
    expect(unknown).toMatchObject({ status: 400, errors: ['unknown database connection "missing"'] });
    expect((await harness.call('read', 'creds/none')).errors).toEqual(['unknown role "none"']);
  });

  it('refuses bad connection input naming the field', async () => {
    expect(await harness.call('update', 'config/x', { connection_url: POSTGRES_URL })).toMatchObject({ status: 400, errors: ['missing required field "plugin_name"'] });
    const plugin = await harness.call('update', 'config/x', { plugin_name: 'oracle-database-plugin', connection_url: POSTGRES_URL });
    expect(plugin.status).toBe(400);
    expect(plugin.errors![0]).toContain('field "plugin_name": unknown plugin "oracle-database-plugin"');
    const version = await harness.call('update', 'config/x', { plugin_name: 'postgresql-database-plugin', plugin_version: 'v9.9.9', connection_url: POSTGRES_URL });
    expect(version.errors![0]).toContain('field "plugin_version"');
    const url = await harness.call('update', 'config/x', { plugin_name: 'postgresql-database-plugin', connection_url: 'mysql://x' });
    expect(url).toMatchObject({ status: 400, errors: ['field "connection_url": connection_url must be a postgresql:// URL'] });
    const template = await harness.call('update', 'config/x', { plugin_name: 'postgresql-database-plugin', connection_url: POSTGRES_URL, username_template: '{{nonsense}}' });
    expect(template).toMatchObject({ status: 400, errors: ['field "username_template": unknown value "nonsense"'] });
  });

  it('a database that is down gives 502 with a clear message and no secret', async () => {
    const down = await harness.call('update', 'config/down', {
      plugin_name: 'postgresql-database-plugin',
      connection_url: 'postgresql://{{username}}:{{password}}@127.0.0.1:1/test',
      username: 'postgres',
      password: 'down-secret',
    });
    expect(down.status).toBe(502);
    expect(down.errors![0]).toMatch(/^verify connection failed: .*ECONNREFUSED/);
    expect(down.errors![0]).not.toContain('down-secret');

    // Stored without verification, it fails when used.
    await harness.call('update', 'config/down', {
      plugin_name: 'postgresql-database-plugin',
      connection_url: 'postgresql://postgres:literal-secret@127.0.0.1:1/test',
      verify_connection: false,
      allowed_roles: '*',
    });
    expect((await harness.call('read', 'config/down')).data).toMatchObject({ connection_details: { connection_url: 'postgresql://postgres:<redacted>@127.0.0.1:1/test' } });
    await harness.call('update', 'roles/downrole', { db_name: 'down', creation_statements: CREATE });
    const creds = await harness.call('read', 'creds/downrole');
    expect(creds.status).toBe(502);
    expect(creds.errors![0]).toMatch(/^create user failed: .*ECONNREFUSED/);
    expect(creds.errors![0]).not.toContain('literal-secret');
    expect((await harness.call('update', 'reset/down')).status).toBe(502);
  });

  it('rsa_private_key credentials hand the public key to the statements', async () => {
    await harness.call('update', 'roles/keyed', {
      db_name: db,
      credential_type: 'rsa_private_key',
      credential_config: { key_bits: 2048 },
      creation_statements: [`CREATE ROLE "{{name}}" LOGIN`, `COMMENT ON ROLE "{{name}}" IS '{{public_key}}'`],
    });
    const creds = await harness.call('read', 'creds/keyed');
    expect(creds.status).toBe(200);
    const { username, rsa_private_key: privateKey } = creds.data as { username: string; rsa_private_key: string };
    createdRoles.push(username);
    const expected = createPublicKey(privateKey).export({ type: 'spki', format: 'pem' }).toString();
    expect((await postgresRole(username))!.comment).toBe(expected);
    await harness.revoke(creds.secret!.internalData);
    expect(await postgresRole(username)).toBeNull();
  });

  it('client_certificate credentials are signed by the configured CA', async () => {
    const ca = await testCa();
    const written = await harness.call('update', 'roles/cert', {
      db_name: db,
      credential_type: 'client_certificate',
      credential_config: { ca_cert: ca.cert, ca_private_key: ca.key, key_type: 'ec', key_bits: 384, common_name_template: 'cn-{{.RoleName}}-{{random 8 | lowercase}}' },
      creation_statements: `CREATE ROLE "{{name}}" LOGIN`,
      default_ttl: '30m',
    });
    expect(written.status).toBe(204);
    const read = await harness.call('read', 'roles/cert');
    expect(JSON.stringify(read.data)).not.toContain('PRIVATE KEY');

    const creds = await harness.call('read', 'creds/cert');
    expect(creds.status).toBe(200);
    const data = creds.data as { username: string; client_certificate: string; private_key: string; private_key_type: string };
    createdRoles.push(data.username);
    expect(data.username).toMatch(/^cn-cert-[a-z0-9]{8}$/);
    expect(data.private_key_type).toBe('ec');
    const certificate = new X509Certificate(data.client_certificate);
    expect(certificate.subject).toBe(`CN=${data.username}`);
    expect(certificate.verify(new X509Certificate(ca.cert).publicKey)).toBe(true);
    expect(certificate.checkPrivateKey(createPrivateKey(data.private_key))).toBe(true);
    expect(await postgresRole(data.username)).not.toBeNull();
    await harness.revoke(creds.secret!.internalData);

    const missing = await harness.call('update', 'roles/cert2', { db_name: db, credential_type: 'client_certificate', credential_config: { key_type: 'rsa' }, creation_statements: CREATE });
    expect(missing).toMatchObject({ status: 400, errors: ['field "credential_config": "ca_cert" and "ca_private_key" are required for client_certificate'] });
    const bits = await harness.call('update', 'roles/cert2', { db_name: db, credential_type: 'rsa_private_key', credential_config: { key_bits: 1024 }, creation_statements: CREATE });
    expect(bits.errors).toEqual(['field "credential_config": "key_bits" must be one of 2048, 3072, 4096']);
  });

  it('rotate-root changes the root password in the database and never shows it', async () => {
    const root = unique('svc_root');
    createdRoles.push(root);
    await withPostgres((client) => client.query(`CREATE ROLE "${root}" LOGIN CREATEROLE PASSWORD 'initial-pw'`));
    await harness.call('update', 'config/rootconn', {
      plugin_name: 'postgresql-database-plugin',
      connection_url: POSTGRES_URL,
      username: root,
      password: 'initial-pw',
      allowed_roles: '*',
    });
    expect(await postgresLoginWorks(root, 'initial-pw')).toBe(true);
    const rotated = await harness.call('update', 'rotate-root/rootconn');
    expect(rotated.status).toBe(204);
    expect(await postgresLoginWorks(root, 'initial-pw')).toBe(false);
    expect(JSON.stringify((await harness.call('read', 'config/rootconn')).data)).not.toMatch(/"password"/);

    // The connection keeps working with the new password it stored.
    await harness.call('update', 'roles/after-rotate', { db_name: 'rootconn', creation_statements: CREATE });
    const creds = await harness.call('read', 'creds/after-rotate');
    expect(creds.status).toBe(200);
    createdRoles.push((creds.data as { username: string }).username);
    await harness.revoke(creds.secret!.internalData);
  });

  it('static roles rotate the password of an existing user and leave it in place when deleted', async () => {
    const user = unique('svc_static');
    createdRoles.push(user);
    await withPostgres((client) => client.query(`CREATE ROLE "${user}" LOGIN PASSWORD 'before-rotation'`));
    const created = await harness.call('update', 'static-roles/pgstatic', { db_name: db, username: user, rotation_period: '1h' });
    expect(created.status).toBe(204);
    expect(await postgresLoginWorks(user, 'before-rotation')).toBe(false);

    const first = (await harness.call('read', 'static-creds/pgstatic')).data as { password: string; ttl: number; last_service_rotation: string };
    expect(first).toMatchObject({ username: user, rotation_period: 3600 });
    expect(first.ttl).toBeGreaterThan(3590);
    expect(await postgresLoginWorks(user, first.password)).toBe(true);

    expect((await harness.call('update', 'rotate-role/pgstatic')).status).toBe(204);
    const second = (await harness.call('read', 'static-creds/pgstatic')).data as { password: string };
    expect(second.password).not.toBe(first.password);
    expect(await postgresLoginWorks(user, first.password)).toBe(false);
    expect(await postgresLoginWorks(user, second.password)).toBe(true);

    expect((await harness.call('delete', 'static-roles/pgstatic')).status).toBe(204);
    expect(await postgresLoginWorks(user, second.password)).toBe(true);
    expect((await harness.call('read', 'static-creds/pgstatic')).status).toBe(400);
  });

  it('the SCRAM check used here tells passwords apart', async () => {
    const user = unique('svc_scram');
    createdRoles.push(user);
    await withPostgres((client) => client.query(`CREATE ROLE "${user}" LOGIN PASSWORD 'abc-123'`));
    const role = await postgresRole(user);
    expect(scramAccepts(role!.verifier, 'abc-123')).toBe(true);
    expect(scramAccepts(role!.verifier, 'abc-124')).toBe(false);
  });
  it('generates passwords under the connection\'s named policy from the engine context\'s password policies', async () => {
    const passwordPolicies = { lowercase: 'length = 32\nrule "charset" {\n  charset = "abcdefghijklmnopqrstuvwxyz"\n  min-chars = 32\n}' };
    const custom = new DatabaseHarness(undefined, undefined, { passwordPolicies });
    try {
      await custom.call('update', 'config/pol', { plugin_name: 'postgresql-database-plugin', connection_url: POSTGRES_URL, username: 'postgres', allowed_roles: '*', password_policy: 'lowercase' });
      await custom.call('update', 'roles/pol', { db_name: 'pol', creation_statements: CREATE });
      const creds = await custom.call('read', 'creds/pol');
      const { username, password } = creds.data as { username: string; password: string };
      createdRoles.push(username);
      expect(password).toMatch(/^[a-z]{32}$/);
      expect(await postgresLoginWorks(username, password)).toBe(true);
      await custom.revoke(creds.secret!.internalData);

      await custom.call('update', 'config/pol', { password_policy: 'missing' });
      expect((await custom.call('read', 'creds/pol')).errors).toEqual(['password policy "missing" does not exist']);
      const help = custom.backend.help('creds/pol');
      expect(help.help).toContain('Creates a database user');
    } finally {
      await custom.backend.cleanup();
    }
  });
});
