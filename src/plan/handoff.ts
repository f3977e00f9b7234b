import type { ApprovedPlan } from '../log/kinds.js'
import { planHistory } from '../log/history.js'
import { REQUEST_HEADER_EVENT } from '../log/kinds.js'
import type { PlanEpisode } from '../log/kinds.js'
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
 * fresh context and no `request/header` follows its record (no request has been derived since),
 * the plan, its version and the feedback given on its earlier versions; else null.
 */
export function dueHandoff(events: readonly SessionEvent[], approved: ApprovedPlan | null, start: PlanEpisode | null = null): PlanHandoff | null {
  if (approved?.fresh !== true) return null
  for (let i = events.length - 1; i >= 0 && events[i]!.seq > approved.seq; i--) {
    if (events[i]!.type === REQUEST_HEADER_EVENT) return null
  }
  const plans = planHistory(events, start).filter((plan) => plan.seq <= approved.seq)
  const last = plans.at(-1)
  const version = last?.plan === approved.plan ? last.version : 1
  const episode = plans.slice(plans.length - version, -1)
  const decisions = episode.flatMap((plan) => (plan.feedback === undefined ? [] : [{ version: plan.version, feedback: plan.feedback }]))
  const handoff = { title: approved.title, plan: approved.plan, version, decisions }
  return { ...handoff, text: handoffText(handoff) }
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
