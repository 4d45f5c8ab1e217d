import { checkKey, checkListPrefix } from '../keys';

/**
 * Row layout shared by PostgreSQL and the embedded store: each entry is stored under its parent
 * directory, so listing a directory reads only that directory's rows from the primary key index.
 * Directories are stored with a leading '/' ('' -> '/', 'a/b/' -> '/a/b/') so the root is not a
 * special case: every descendant of directory D sorts in the range [D, D without its last '/' +
 * '0'), '0' being the character after '/' in the "C" collation the columns use.
 */
export interface RowAddress {
  directory: string;
  name: string;
}

export function rowAddress(key: string): RowAddress {
  const slash = checkKey(key).lastIndexOf('/');
  return { directory: `/${key.slice(0, slash + 1)}`, name: key.slice(slash + 1) };
}

export function storedDirectory(prefix: string): string {
  return `/${checkListPrefix(prefix)}`;
}

/** The smallest string above every path inside `directory` (which ends in '/'). */
export function directoryUpperBound(directory: string): string {
  return `${directory.slice(0, -1)}0`;
}
