import { Backend } from './backend';
import { LoginPaths } from './login-paths';

/** An auth method as a gateway sees it from elsewhere: patterns in match order, logins among them. */
const method = new Backend({
  type: 'method',
  help: 'An auth method.',
  paths: [
    // Matched first: the login paths below never see "role/admin".
    { pattern: 'role/admin', synopsis: 'A closed role.', operations: { update: { summary: 'Closed.', handler: async () => undefined } } },
    {
      pattern: 'role/:name',
      aliases: ['roles/:name'],
      synopsis: 'A role login.',
      operations: { create: { summary: 'Log in.', unauthenticated: true, handler: async () => undefined }, read: { summary: 'Read.', handler: async () => undefined } },
    },
    { pattern: 'login', synopsis: 'Login.', operations: { update: { summary: 'Log in.', unauthenticated: true, handler: async () => undefined } } },
  ],
});

describe('login declarations', () => {
  it("list each pattern and alias in match order with its unauthenticated operations, create and update standing in for each other", () => {
    expect(method.logins()).toEqual([
      { pattern: 'role/admin', operations: [] },
      { pattern: 'role/:name', operations: ['create', 'update'] },
      { pattern: 'roles/:name', operations: ['create', 'update'] },
      { pattern: 'login', operations: ['create', 'update'] },
    ]);
  });

  it('answer as the backend itself does, after a trip as JSON', () => {
    const logins = new LoginPaths(JSON.parse(JSON.stringify(method.logins())));
    const cases: [string, 'read' | 'update' | 'create' | 'delete'][] = [
      ['login', 'update'],
      ['login', 'read'],
      ['role/web', 'update'],
      ['roles/web', 'create'],
      ['role/web', 'read'],
      ['role/admin', 'update'],
      ['role/web/extra', 'update'],
      ['nothing', 'update'],
    ];
    expect(cases.map(([path, operation]) => logins.isLogin(path, operation))).toEqual(cases.map(([path, operation]) => method.operationInfo(path, operation)?.unauthenticated === true));
    expect(cases.map(([path, operation]) => logins.isLogin(path, operation))).toEqual([true, false, true, true, false, false, false, false]);
  });
});
