#!/usr/bin/env node
/**
 * An example external plugin: a small secrets engine keeping notes, served over the plugin
 * protocol with @svc/plugin-sdk. Register its executable in sys/plugins/catalog/secret/<name> and
 * mount it with sys/mounts (docs/plugins.md). Its data lives in the host's storage, encrypted there.
 */
import { Backend, listResponse, type FieldData, type Request } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { runPlugin, type PluginContext } from '@svc/plugin-sdk';
import type { MountInfo } from '@svc/framework';

interface Note {
  value: string;
  version: number;
}

/** `--label=...` among the plugin's arguments (set per registration), shown by `info`. */
function label(): string {
  return process.argv.find((arg) => arg.startsWith('--label='))?.slice('--label='.length) ?? '';
}

function notesBackend(_mount: MountInfo, { storage, logger }: PluginContext): Backend {
  const notes = storage.sub('notes/');
  const write = async (_req: Request, f: FieldData) => {
    const name = f.params.name;
    // Check-and-set runs in a storage transaction on the host, with the note's key locked.
    const version = await notes.transaction(async (tx) => {
      await tx.lock(name);
      const stored = await tx.get(name);
      const current = stored ? (JSON.parse(stored.toString('utf8')) as Note).version : 0;
      if (f.has('cas') && f.get<number>('cas') !== current) {
        throw ServiceError.badRequest(`check-and-set mismatch: the note is at version ${current}`);
      }
      const note: Note = { value: f.get('value'), version: current + 1 };
      await tx.put(name, Buffer.from(JSON.stringify(note), 'utf8'));
      return note.version;
    });
    logger.info({ note: name, version }, 'note written');
    return { data: { version } };
  };
  return new Backend({
    type: 'notes',
    help: 'Keeps notes: an example plugin served over the plugin protocol.',
    paths: [
      {
        pattern: 'notes/',
        synopsis: 'Lists the notes.',
        operations: { list: { summary: 'List the notes.', handler: async () => listResponse(await notes.list('')) } },
      },
      {
        pattern: 'notes/:name',
        synopsis: 'Writes, reads or deletes a note.',
        fields: {
          name: { type: 'name', description: 'Name of the note.' },
          value: { type: 'string', required: true, sensitive: true, description: 'Text of the note.' },
          cas: { type: 'int', description: 'Write only if the note is at this version (0: does not exist yet).' },
        },
        operations: {
          create: { summary: 'Write a note.', handler: write },
          update: { summary: 'Write a note.', handler: write },
          read: {
            summary: 'Read a note.',
            handler: async (_req, f) => {
              const note = await notes.getJSON<Note>(f.params.name);
              return note ? { data: { value: note.value, version: note.version } } : undefined;
            },
          },
          delete: {
            summary: 'Delete a note.',
            handler: async (_req, f) => {
              await notes.delete(f.params.name);
              return undefined;
            },
          },
        },
      },
      {
        pattern: 'info',
        synopsis: 'What this plugin process is: its process id, the label its registration passed, the greeting of its environment.',
        operations: {
          read: {
            summary: 'Read the plugin process information.',
            handler: async () => ({ data: { pid: process.pid, label: label(), greeting: process.env.NOTES_GREETING ?? '' } }),
          },
        },
      },
    ],
  });
}

runPlugin(notesBackend);
