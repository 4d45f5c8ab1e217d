import type { MigrationInterface, QueryRunner } from 'typeorm';
import { quoteTable, replicationTables } from './statements';

type MigrationClass = new () => MigrationInterface;

/**
 * Schema migrations for one store table, oldest first. TypeORM instantiates migration classes
 * itself, so the table name is bound by building the classes per table. A class name ends in the
 * 13-digit timestamp TypeORM orders migrations by.
 */
export function storeMigrations(table: string): MigrationClass[] {
  const t = quoteTable(table);

  class CreateStoreTable1767225600000 implements MigrationInterface {
    readonly name = 'CreateStoreTable1767225600000';

    async up(runner: QueryRunner): Promise<void> {
      // "C" collation: byte order, which the directory range scans in statements.ts rely on.
      await runner.query(`CREATE TABLE ${t} (
        parent_path text COLLATE "C" NOT NULL,
        name text COLLATE "C" NOT NULL,
        value bytea NOT NULL,
        PRIMARY KEY (parent_path, name)
      )`);
    }

    async down(runner: QueryRunner): Promise<void> {
      await runner.query(`DROP TABLE ${t}`);
    }
  }

  const { wal, head, meta } = replicationTables(table);

  class CreateReplicationTables1795392000000 implements MigrationInterface {
    readonly name = 'CreateReplicationTables1795392000000';

    async up(runner: QueryRunner): Promise<void> {
      await runner.query(`CREATE TABLE ${wal} (
        idx bigint PRIMARY KEY,
        op text NOT NULL CHECK (op IN ('put', 'delete', 'reset')),
        key text COLLATE "C" NOT NULL,
        value bytea
      )`);
      await runner.query(`CREATE TABLE ${head} (
        id smallint PRIMARY KEY CHECK (id = 1),
        last_idx bigint NOT NULL,
        logging boolean NOT NULL
      )`);
      await runner.query(`INSERT INTO ${head} (id, last_idx, logging) VALUES (1, 0, false)`);
      await runner.query(`CREATE TABLE ${meta} (name text COLLATE "C" PRIMARY KEY, value bytea NOT NULL)`);
    }

    async down(runner: QueryRunner): Promise<void> {
      await runner.query(`DROP TABLE ${meta}, ${head}, ${wal}`);
    }
  }

  return [CreateStoreTable1767225600000, CreateReplicationTables1795392000000];
}
