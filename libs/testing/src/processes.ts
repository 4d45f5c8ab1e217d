/** Whether a process with this id exists (a killed child counts until its parent has reaped it). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
