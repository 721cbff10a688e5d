export { cronProblem, nextTick, timeZoneProblem } from './cron';
export { declaredSchedules } from './declared';
export { fireSchedules } from './fire';
export { planFiring } from './policy';
export { type ScheduleDeclaration, type ScheduleSpec, scheduleFields, scheduleIssues } from './spec';
