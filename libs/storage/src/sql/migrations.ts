import type { MigrationInterface, QueryRunner } from 'typeorm';
import { quoteTable } from './statements';

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

  return [CreateStoreTable1767225600000];
}
