/** When a static role rotates: every `rotation_period`, or at `rotation_schedule` within `rotation_window`. */
import { CronExpressionParser } from 'cron-parser';
import { ServiceError } from '@svc/api-contract';
import type { StaticRoleRecord } from './records';

export const MIN_ROTATION_PERIOD = 5;
export const MIN_ROTATION_WINDOW = 3600;

type Schedule = Pick<StaticRoleRecord, 'rotation_period' | 'rotation_schedule' | 'rotation_window'>;

/** Checks a five-field cron expression (minute hour day-of-month month day-of-week). */
export function checkCron(expression: string): void {
  if (expression.trim().split(/\s+/).length !== 5) {
    throw ServiceError.badRequest('field "rotation_schedule": must be a cron expression with five fields: minute, hour, day of month, month, day of week');
  }
  try {
    CronExpressionParser.parse(expression, { tz: 'UTC' });
  } catch (err) {
    throw ServiceError.badRequest(`field "rotation_schedule": invalid cron expression: ${(err as Error).message}`);
  }
}

/** Exactly one of period and schedule; the period and window minimums; a window only with a schedule. */
export function checkSchedule(schedule: Schedule): void {
  const { rotation_period: period, rotation_schedule: cron, rotation_window: window } = schedule;
  if ((period === undefined) === (cron === undefined)) {
    throw ServiceError.badRequest('exactly one of "rotation_period" and "rotation_schedule" must be set');
  }
  if (period !== undefined && period < MIN_ROTATION_PERIOD) {
    throw ServiceError.badRequest(`field "rotation_period": must be at least ${MIN_ROTATION_PERIOD} seconds`);
  }
  if (cron !== undefined) checkCron(cron);
  if (window !== undefined) {
    if (period !== undefined) throw ServiceError.badRequest('field "rotation_window": applies only with "rotation_schedule", not with "rotation_period"');
    if (window < MIN_ROTATION_WINDOW) throw ServiceError.badRequest(`field "rotation_window": must be at least ${MIN_ROTATION_WINDOW} seconds (1 hour)`);
  }
}

/** The rotation after one at `from`. Schedules are read in UTC. */
export function nextRotation(schedule: Schedule, from: Date): Date {
  if (schedule.rotation_period !== undefined) return new Date(from.getTime() + schedule.rotation_period * 1000);
  return CronExpressionParser.parse(schedule.rotation_schedule ?? '', { currentDate: from, tz: 'UTC' }).next().toDate();
}

/** Whether a role is due; a scheduled rotation past its window is missed and waits for the next. */
export function rotationDue(role: Schedule & Pick<StaticRoleRecord, 'next_rotation'>, now: Date): 'wait' | 'rotate' | 'missed' {
  const due = Date.parse(role.next_rotation);
  if (now.getTime() < due) return 'wait';
  if (role.rotation_schedule !== undefined && role.rotation_window !== undefined && now.getTime() > due + role.rotation_window * 1000) return 'missed';
  return 'rotate';
}
