import { planHistory } from '../log/history.js'
import { PLAN_REVIEW_EVENT, episodeAfter, presentsPlan, requestFollows, type ApprovedPlan, type PlanEpisode } from '../log/kinds.js'
import type { SessionEvent } from '../types.js'

/** What a host receives when the user approves a plan into a fresh context (R102). */
export interface PlanHandoff {
  title: string
  plan: string
  /** The approved plan's version in its episode (R96). */
  version: number
  /** The decisions made while planning: each earlier version's keep-planning feedback (with its comments, R100). */
  decisions: { version: number; feedback: string }[]
  /** The first message of the fresh context (`handoffText`): the plan and the decisions, told once. */
  text: string
}

/**
 * The handoff due at the next request (R102): when the plan approved last was approved into a
 * fresh context and no `request/header` follows its record (no request has been derived since;
 * an approval before the first of `events`, which then follow a checkpoint, had one before it),
 * the plan, its version and the feedback given on its earlier versions; else null. `start` is the
 * episode the events begin in (`episodeBefore(session)` for events after a checkpoint, R76): its
 * versions and their decisions come before the events' own.
 */
export function dueHandoff(events: readonly SessionEvent[], approved: ApprovedPlan | null, start: PlanEpisode | null = null): PlanHandoff | null {
  if (approved?.fresh !== true || requestFollows(events, approved.seq)) return null
  // Approved before the events: they follow a checkpoint, and none is made while a handoff is
  // due (R76), so a request followed the approval before it; the handoff was told there.
  if (events.length > 0 && approved.seq < events[0]!.seq) return null
  const plans = planHistory(events, start).filter((plan) => plan.seq <= approved.seq)
  // The approved plan is the last one presented up to its approval: among the events, or the start's.
  const last = plans.at(-1) ?? start
  const version = last?.plan === approved.plan ? last.version : 1
  const episode = plans.slice(Math.max(0, plans.length - version), -1)
  // The episode's versions before the events' own are the start's, with the decisions made on them.
  const first = version - episode.length
  const decisions = [
    ...startDecisions(start, events, approved.seq).filter((decision) => decision.version < first),
    ...episode.flatMap((plan) => (plan.feedback === undefined ? [] : [{ version: plan.version, feedback: plan.feedback }])),
  ]
  const handoff = { title: approved.title, plan: approved.plan, version, decisions }
  return { ...handoff, text: handoffText(handoff) }
}

/**
 * The decisions made on the versions of `start` (the episode events begin in) up to the event
 * `seq`: its own, and the feedback of the records in `events` that settle its presentations still
 * open, each by the first record of its id, as `planHistory` settles them (R96).
 */
function startDecisions(start: PlanEpisode | null, events: readonly SessionEvent[], seq: number): { version: number; feedback: string }[] {
  let settled: PlanEpisode | null = start
  for (let i = 0; i < events.length && settled?.open !== undefined && events[i]!.seq <= seq; i++) {
    const event = events[i]!
    if (start!.after !== undefined && event.seq <= start!.after) continue // in the start already
    if (event.type !== PLAN_REVIEW_EVENT || typeof event.data !== 'object' || event.data === null) continue
    const data = event.data as Record<string, unknown>
    // A new request under the same id is another presentation: the start's is no longer open.
    if (presentsPlan(data)) settled = { ...settled, open: settled.open.filter((presented) => presented.reviewId !== data.reviewId) }
    else settled = episodeAfter(settled, event.type, data)
  }
  return (settled?.decisions ?? []).map(({ version, feedback }) => ({ version, feedback }))
}

/**
 * The fresh context's first message (R102): `The user approved this plan (v<n>) to be carried out
 * in a fresh context: the conversation that produced it was set aside. Carry it out, starting
 * now.`, then `Decisions made while planning:` and one `- v<k>: <feedback>` line per earlier
 * version the user gave feedback on (when any), then `The plan:` and the plan verbatim, a blank
 * line between the parts.
 */
export function handoffText(handoff: Pick<PlanHandoff, 'plan' | 'version' | 'decisions'>): string {
  const parts = [
    `The user approved this plan (v${handoff.version}) to be carried out in a fresh context: the conversation that produced it was set aside. Carry it out, starting now.`,
  ]
  if (handoff.decisions.length > 0) {
    parts.push(['Decisions made while planning:', ...handoff.decisions.map((d) => `- v${d.version}: ${d.feedback}`)].join('\n'))
  }
  parts.push(`The plan:\n\n${handoff.plan}`)
  return parts.join('\n\n')
}
