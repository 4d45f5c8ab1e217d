import type { MigrationInterface, QueryRunner } from 'typeorm';
import { conditionalWriteBatchFunction, conditionalWriteFunction, quoteTable, replicationTables } from './statements';

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

  const writeIfUnchanged = conditionalWriteFunction(table);
  const writeBatch = conditionalWriteBatchFunction(table);

  // plpgsql shared by both conditional write functions. Makes write i of the write_* arrays (a
  // null value deletes) and notes it in `logged` when it changed a row.
  const writeRow = `
            IF write_values[i] IS NULL THEN
              DELETE FROM ${t} WHERE parent_path = write_dirs[i] AND name = write_names[i];
              IF FOUND THEN
                logged := logged || i;
              END IF;
            ELSE
              INSERT INTO ${t} (parent_path, name, value) VALUES (write_dirs[i], write_names[i], write_values[i])
                ON CONFLICT (parent_path, name) DO UPDATE SET value = EXCLUDED.value;
              logged := logged || i;
            END IF;`;
  // Logs the writes in `logged` when logging is on: the head row last, after the data rows, as
  // every writer of the store takes them.
  const logWrites = `
          UPDATE ${head} SET last_idx = last_idx + cardinality(logged) WHERE logging AND cardinality(logged) > 0 RETURNING last_idx INTO last;
          IF last IS NOT NULL THEN
            INSERT INTO ${wal} (idx, op, key, value)
              SELECT last - cardinality(logged) + ord, CASE WHEN write_values[i] IS NULL THEN 'delete' ELSE 'put' END, write_keys[i], write_values[i]
              FROM unnest(logged) WITH ORDINALITY AS l(i, ord);
          END IF;`;
  const compareRow = `
            found_value := NULL;
            SELECT value INTO found_value FROM ${t} WHERE parent_path = check_dirs[i] AND name = check_names[i];`;

  /**
   * The conditional write as a function, so it is one round trip: each statement in it sees what
   * was committed before it ran (read committed), so the values are compared after the locks are
   * taken, as a transaction of the store compares them.
   */
  class CreateConditionalWrite1796774400000 implements MigrationInterface {
    readonly name = 'CreateConditionalWrite1796774400000';

    async up(runner: QueryRunner): Promise<void> {
      await runner.query(`CREATE FUNCTION ${writeIfUnchanged}(
          lock_keys text[], check_dirs text[], check_names text[], expected bytea[],
          write_dirs text[], write_names text[], write_values bytea[], write_keys text[]
        ) RETURNS boolean LANGUAGE plpgsql AS $$
        DECLARE
          found_value bytea;
          logged int[] := '{}';
          last bigint;
        BEGIN
          PERFORM pg_advisory_xact_lock(hashtextextended('${table}:' || k, 0)) FROM unnest(lock_keys) WITH ORDINALITY AS l(k, ord) ORDER BY ord;
          FOR i IN 1 .. coalesce(array_length(check_dirs, 1), 0) LOOP${compareRow}
            IF found_value IS DISTINCT FROM expected[i] THEN
              RETURN false;
            END IF;
          END LOOP;
          FOR i IN 1 .. coalesce(array_length(write_dirs, 1), 0) LOOP${writeRow}
          END LOOP;${logWrites}
          RETURN true;
        END
        $$`);
    }

    async down(runner: QueryRunner): Promise<void> {
      await runner.query(`DROP FUNCTION ${writeIfUnchanged}`);
    }
  }

  /**
   * Several conditional writes in one call and one transaction (one commit for all of them): each
   * member, in order, takes its locks, compares its values and, only if all are unchanged, makes
   * its writes, as the single function does; a later member sees what an earlier one wrote. The
   * members' values lie one after the other in the arrays; `*_ends` holds where each member's
   * part ends. Answers whether each member wrote.
   */
  class CreateConditionalWriteBatch1797379200000 implements MigrationInterface {
    readonly name = 'CreateConditionalWriteBatch1797379200000';

    async up(runner: QueryRunner): Promise<void> {
      await runner.query(`CREATE FUNCTION ${writeBatch}(
          lock_ends int[], lock_keys text[],
          check_ends int[], check_dirs text[], check_names text[], expected bytea[],
          write_ends int[], write_dirs text[], write_names text[], write_values bytea[], write_keys text[]
        ) RETURNS boolean[] LANGUAGE plpgsql AS $$
        DECLARE
          found_value bytea;
          logged int[] := '{}';
          last bigint;
          unchanged boolean;
          written boolean[] := '{}';
          lock_from int := 1;
          check_from int := 1;
          write_from int := 1;
        BEGIN
          FOR m IN 1 .. coalesce(array_length(lock_ends, 1), 0) LOOP
            PERFORM pg_advisory_xact_lock(hashtextextended('${table}:' || lock_keys[n], 0)) FROM generate_series(lock_from, lock_ends[m]) AS g(n) ORDER BY n;
            unchanged := true;
            FOR i IN check_from .. check_ends[m] LOOP${compareRow}
              IF found_value IS DISTINCT FROM expected[i] THEN
                unchanged := false;
                EXIT;
              END IF;
            END LOOP;
            IF unchanged THEN
              FOR i IN write_from .. write_ends[m] LOOP${writeRow}
              END LOOP;
            END IF;
            written := written || unchanged;
            lock_from := lock_ends[m] + 1;
            check_from := check_ends[m] + 1;
            write_from := write_ends[m] + 1;
          END LOOP;${logWrites}
          RETURN written;
        END
        $$`);
    }

    async down(runner: QueryRunner): Promise<void> {
      await runner.query(`DROP FUNCTION ${writeBatch}`);
    }
  }

  return [CreateStoreTable1767225600000, CreateReplicationTables1795392000000, CreateConditionalWrite1796774400000, CreateConditionalWriteBatch1797379200000];
}
