/**
 * A web host (Vercel REST) emulator for project environment variables: bearer tokens, each for a
 * team (or a personal account), `teamId` checked against the project's team, upsert by key,
 * targets validated; values kept as sent so tests read what the project would deploy with.
 */
import { randomUUID } from 'node:crypto';
import { FaultInjector, listenLocally, readBody, sendJson } from './http-server';

export interface EnvironmentVariable {
  id: string;
  key: string;
  value: string;
  type: string;
  target: string[];
}

export interface Project {
  id: string;
  /** The team owning the project; undefined for a personal project. */
  teamId?: string;
  envs: EnvironmentVariable[];
}

export interface VercelEmulator {
  url: string;
  projects: Map<string, Project>;
  /** Token → the team it acts for ('' for a personal account). */
  tokens: Map<string, string>;
  addProject(id: string, teamId?: string): Project;
  /** The value of a project's variable, if set. */
  variable(projectId: string, key: string): EnvironmentVariable | undefined;
  calls: string[];
  /** Operations: `upsert-env`, `list-env`, `delete-env`. */
  failNext(operation: string, status: number, code: string, times?: number): void;
  close(): Promise<void>;
}

const TARGETS = new Set(['development', 'preview', 'production']);
const forbidden = { error: { code: 'forbidden', message: 'Not authorized' } };

export async function startVercelEmulator(): Promise<VercelEmulator> {
  const projects = new Map<string, Project>();
  const tokens = new Map<string, string>();
  const calls: string[] = [];
  const faults = new FaultInjector();

  const server = await listenLocally(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://emulator');
    calls.push(`${req.method} ${url.pathname}`);
    const body = await readBody(req);
    const token = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
    const team = token === undefined ? undefined : tokens.get(token);
    if (team === undefined) return sendJson(res, 403, forbidden);
    const match = /^\/v(?:9|10)\/projects\/([^/]+)\/env(?:\/([^/]+))?$/.exec(url.pathname);
    if (!match) return sendJson(res, 404, { error: { code: 'not_found', message: 'The requested path was not found' } });
    const project = projects.get(decodeURIComponent(match[1]));
    const teamId = url.searchParams.get('teamId') ?? '';
    // A token reaches projects of its own team, named with that team's id.
    if (!project || (project.teamId ?? '') !== teamId || (project.teamId ?? '') !== team) return sendJson(res, 404, { error: { code: 'not_found', message: 'Project not found' } });
    const operation = req.method === 'POST' ? 'upsert-env' : req.method === 'DELETE' ? 'delete-env' : 'list-env';
    const fault = faults.take(operation);
    if (fault) return sendJson(res, fault.status, fault.body);

    if (operation === 'list-env') return sendJson(res, 200, { envs: project.envs.map(({ value: _value, ...described }) => described) });
    if (operation === 'delete-env') {
      const index = project.envs.findIndex((env) => env.id === match[2]);
      if (index < 0) return sendJson(res, 404, { error: { code: 'env_not_found', message: 'Environment variable not found' } });
      const [removed] = project.envs.splice(index, 1);
      return sendJson(res, 200, { id: removed.id, key: removed.key });
    }
    const input = JSON.parse(body.toString('utf8') || '{}') as Partial<EnvironmentVariable>;
    if (!input.key || typeof input.value !== 'string' || !Array.isArray(input.target) || input.target.length === 0 || input.target.some((target) => !TARGETS.has(target))) {
      return sendJson(res, 400, { error: { code: 'bad_request', message: 'Invalid request: key, value and target (development, preview, production) are required' } });
    }
    const existing = project.envs.find((env) => env.key === input.key);
    if (existing && url.searchParams.get('upsert') !== 'true') return sendJson(res, 400, { error: { code: 'ENV_ALREADY_EXISTS', message: 'A variable with that key already exists' } });
    const variable: EnvironmentVariable = { id: existing?.id ?? randomUUID(), key: input.key, value: input.value, type: input.type ?? 'plain', target: input.target };
    project.envs = [...project.envs.filter((env) => env.key !== input.key), variable];
    sendJson(res, 201, { created: { ...variable, value: undefined } });
  });

  return {
    url: server.url,
    projects,
    tokens,
    addProject: (id, teamId) => {
      const project: Project = { id, teamId, envs: [] };
      projects.set(id, project);
      return project;
    },
    variable: (projectId, key) => projects.get(projectId)?.envs.find((env) => env.key === key),
    calls,
    failNext: (operation, status, code, times) => faults.failNext(operation, { status, body: { error: { code, message: code } } }, times),
    close: server.close,
  };
}
