/**
 * `plan-mode inspect <file.jsonl> [--at SEQ] [--json]`: what a session log tells about plan mode,
 * event by event: F after the event, the projection's pending flag, and K, what the model was
 * told (R30, R31: the last `request/header` or approved review). Then the final (or `--at`)
 * state and the plan's review history.
 */
import {
  replayPlanLog,
  describePlanLogEvent,
  foldPlanLogEvent,
  foldViolations,
  diffPlans,
  formatPlanDiff,
  planHistory,
  planProjection,
  type PlanLogFold,
  type SessionEvent,
  type ViolationFold,
} from 'xstate-plan-mode'
import { loadLogFile } from './log-file.js'
import { CliError, type CliIo, type Styles } from './io.js'

/** One row of the table: the event and the state right after it. */
export interface InspectRow {
  seq: number
  type: string
  /** F after the event. */
  active: boolean
  /** The projection's pending flag after the event (R58). */
  pending: boolean
  /** K after the event: what the model was last told, null before it was told anything. */
  told: boolean | null
  /** A one-line summary of the event's data. */
  detail: string
}

/** One presented plan and how its review ended (R49, R96): the plan's version history. */
export interface InspectReview {
  /** The seq of the record that presented it. */
  seq: number
  /** Its version within its planning episode (R96). */
  version: number
  title: string
  /** How the review ended, or `open`. */
  outcome: string
  feedback?: string
  /** `'policy'` when a headless review policy decided it, not the user (R94, R95). */
  by?: 'policy'
  /** Approved into a fresh context (R101). */
  fresh?: true
  /** The change from the previous version (R97), as `formatPlanDiff` lines with 2 lines of context; absent for version 1. */
  changes?: string[]
}

/** What `--json` prints. */
export interface InspectReport {
  file: string
  /** The seq the state is shown at (the last event's without `--at`; 0 for an empty log). */
  at: number
  events: InspectRow[]
  state: { active: boolean; pending: boolean; told: boolean | null; openTurn: boolean }
  reviews: InspectReview[]
  /** The guard's `plan/violation` records up to `at` (R92), as `foldViolations` reads them. */
  violations: ViolationFold
}

/** Options of {@link runInspect}. */
export interface InspectOptions {
  file: string
  at?: number
  json: boolean
  styles: Styles
}

/**
 * Builds the report of a log's events up to `at` (all by default).
 * @throws CliError when `at` is not the seq of an event of the log.
 */
export function inspectEvents(file: string, events: readonly SessionEvent[], at?: number): InspectReport {
  const last = events[events.length - 1]?.seq ?? 0
  if (at !== undefined && (at < 1 || at > last)) {
    throw new CliError(`--at ${at}: ${file} has ${last === 0 ? 'no events' : `events 1..${last}`}`)
  }
  const end = at ?? last
  let fold: PlanLogFold = replayPlanLog([])
  const rows: InspectRow[] = []
  for (const event of events) {
    if (event.seq > end) break
    fold = foldPlanLogEvent(fold, event)
    const view = planProjection.view(fold.projection)
    rows.push({ seq: event.seq, type: event.type, active: view.active, pending: view.pending, told: fold.told, detail: detail(event) })
  }
  const view = planProjection.view(fold.projection)
  const shown = events.filter((event) => event.seq <= end)
  return {
    file,
    at: end,
    events: rows,
    state: { active: view.active, pending: view.pending, told: fold.told, openTurn: fold.openTurn },
    reviews: planHistory(shown).map((presented) => ({
      seq: presented.seq,
      version: presented.version,
      title: presented.title,
      outcome: presented.outcome,
      ...(presented.feedback !== undefined ? { feedback: presented.feedback } : {}),
      ...(presented.by !== undefined ? { by: presented.by } : {}),
      ...(presented.fresh !== undefined ? { fresh: presented.fresh } : {}),
      ...(presented.previous !== null ? { changes: formatPlanDiff(diffPlans(presented.previous, presented.plan), 2) } : {}),
    })),
    violations: foldViolations(shown),
  }
}

/** A short, one-line view of an event's data for the table: the library's line for its kinds. */
function detail(event: SessionEvent): string {
  const line = describePlanLogEvent(event)
  if (line !== undefined) return line.detail
  const json = JSON.stringify(event.data) ?? ''
  return json === '{}' ? '' : json
}

const onOff = (value: boolean | null) => (value === null ? '-' : value ? 'on' : 'off')
const truncate = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text)

/** Renders the report as the table, the state and the review history. */
export function formatReport(report: InspectReport, s: Styles): string {
  const lines: string[] = []
  // A loop, not Math.max(...rows): a long log's rows would overflow the stack as arguments.
  const typeWidth = report.events.reduce((width, row) => Math.max(width, row.type.length), 4)
  const seqWidth = Math.max(3, String(report.at).length)
  lines.push(s.bold(`${'seq'.padStart(seqWidth)}  ${'type'.padEnd(typeWidth)}  F    pending  K    detail`))
  for (const row of report.events) {
    const f = row.active ? s.green('on '.padEnd(4)) : s.dim('off'.padEnd(4))
    const pending = row.pending ? s.yellow('yes'.padEnd(7)) : ''.padEnd(7)
    const told = onOff(row.told).padEnd(4)
    const line = `${String(row.seq).padStart(seqWidth)}  ${row.type.padEnd(typeWidth)}  ${f} ${pending}  ${told} ${truncate(row.detail.replace(/\s+/g, ' '), 80)}`
    lines.push(line.trimEnd())
  }
  const { state } = report
  lines.push('')
  lines.push(s.bold(`State at seq ${report.at}:`))
  lines.push(`  plan mode (F)   ${state.active ? 'on' : 'off'}`)
  lines.push(`  pending         ${state.pending ? 'yes' : 'no'}`)
  lines.push(`  model told (K)  ${state.told === null ? 'nothing yet' : onOff(state.told)}`)
  lines.push(`  turn            ${state.openTurn ? 'open' : 'idle'}`)
  lines.push('')
  lines.push(s.bold('Plan reviews:'))
  if (report.reviews.length === 0) lines.push('  none')
  for (const review of report.reviews) {
    // A headless policy's decision is never shown as a user's (R94, R95).
    const decided = `${review.outcome}${review.fresh === true ? ' (fresh context)' : ''}${review.by === 'policy' ? ' (by policy)' : ''}`
    const outcome = review.outcome === 'approved' ? s.green(decided) : s.yellow(decided)
    lines.push(`  v${review.version} #${review.seq} "${review.title}": ${outcome}${review.feedback !== undefined ? ` — ${review.feedback}` : ''}`)
    if (review.changes?.length === 0) lines.push(s.dim(`      (no change from v${review.version - 1})`))
    for (const change of review.changes ?? []) {
      lines.push(`      ${change.startsWith('+') ? s.green(change) : change.startsWith('-') ? s.red(change) : s.dim(change)}`.trimEnd())
    }
  }
  // Only a guarded agent's log holds violations (R92): other logs get no section to skip over.
  const { violations } = report
  if (violations.entries.length > 0) {
    lines.push('')
    lines.push(s.bold(`Plan-mode violations: ${violations.observed} observed, ${violations.blocked} blocked`))
    for (const [tool, counts] of Object.entries(violations.byTool)) lines.push(`  ${tool}: ${counts.observed} observed, ${counts.blocked} blocked`)
    for (const entry of violations.entries) {
      const action = entry.action === 'blocked' ? s.yellow(entry.action) : s.red(entry.action)
      lines.push(`  #${entry.seq} ${entry.tool} ${action} (call ${entry.callId})`)
    }
  }
  return `${lines.join('\n')}\n`
}

/**
 * Prints the report of a log file (read-only).
 * @throws CliError for a missing or corrupt file, or a bad `--at`.
 */
export async function runInspect(options: InspectOptions, io: CliIo): Promise<number> {
  const loaded = await loadLogFile(options.file, io.signal)
  if (loaded.tornLine !== undefined) io.stderr.write(`${options.file}:${loaded.tornLine}: torn last line skipped\n`)
  const report = inspectEvents(options.file, loaded.events, options.at)
  io.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report, options.styles))
  return 0
}
