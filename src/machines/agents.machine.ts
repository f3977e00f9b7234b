import { fromTransition, type AnyActorScope } from 'xstate'
import { PersistentMap } from './persistent-map.js'
import { canLeaveMemory, type PlanModeSnapshot } from './planMode.view.js'

/**
 * The service's agents: which are attached, in the order of use (R77), which are closing, and
 * what a close left behind (R73). One actor per service; an agent's own state is its chart's.
 *
 * service:  serving --DISPOSE--> disposing (every attachment closes) --all closed--> disposed
 * agent:    attached (`ATTACHED`) → closing (`CLOSE`: a detach, a reload or leaving memory, R60,
 *           R63, R77) → gone once its actor stopped (`CLOSED`); the next call attaches it again
 *           from the log (R64), once the appends its close abandoned have settled (R73).
 *
 * A pure transition (`fromTransition`) over immutable values: every event that changes something
 * makes a new state (the agents in a `PersistentMap`, so a change copies O(log n), not the
 * registry); its effects, closing an attachment and hearing when the appends a close abandoned
 * settle, are deferred through the actor scope and run once the new state is the actor's, as a
 * machine's actions do. What it reads of the world comes in its events (which agents have calls in
 * flight) or from the attachments it holds (their charts' snapshots, R77). A transition function
 * rather than a machine: every attach sends `ATTACHED`, and with a bound every call sends `USED`;
 * a machine's macrostep with one `assign` costs about 2 µs more per event than a transition
 * function (measured at issue #25), more than the idle-attach target's whole margin
 * (docs/benchmarks.md).
 */

/** An agent attached to its chart, as the registry sees it (see `Attachment`). */
export interface AttachedAgent {
  readonly agentId: string
  /** How many attachments the agent had in this service, this one included (R63). */
  readonly generation: number
  readonly snapshot: PlanModeSnapshot
  /** The pending store holds P as the chart does (R77). */
  readonly keepsPendingDurably: boolean
  readonly hasAppendsInFlight: boolean
  /** Lets the work in flight land, then stops the actor (R60, R63, R73). */
  close(): Promise<void>
  appendsSettled(): Promise<void>
}

/** The agents with a call not settled yet: such an agent stays attached (R77). */
export type Busy = { has(agentId: string): boolean }

export interface AgentsInput {
  /** The bound of R77, or undefined: no agent leaves memory. */
  maxAttached: number | undefined
  /** Which agents have a call not settled yet, now: read by the effects that report a close. */
  busy: () => Busy
}

const NO_CALLS: Busy = { has: () => false }

/** What the registry knows of one agent. */
export interface AgentRecord {
  /** Its attachment, closing or not; undefined once it closed. */
  readonly attachment: AttachedAgent | undefined
  /** The attachment is closing: it still answers reads until its actor stopped (R60, R73). */
  readonly closing: boolean
  /** How many attachments it has had; 0 once forgotten (R63: an evicted agent counts anew). */
  readonly generation: number
  /** When it was last used (R77), on the registry's clock. */
  readonly used: number
  /** The settling of the appends its last close abandoned (R73): its next operation waits for it. */
  readonly abandoned: Promise<void> | undefined
}

/**
 * The order of use (R77), kept only with a bound: every use appends `[clock, agentId]`; an entry
 * is live while the agent's record was last used at that clock. Immutable to its readers: the
 * buffer is shared between states, but a state reads only its own `[start, end)` and an append
 * past a newer state's end copies it, so no state ever sees another's entries.
 */
interface Uses {
  readonly buffer: (readonly [number, string])[]
  readonly start: number
  readonly end: number
}

export interface AgentsContext {
  readonly phase: 'serving' | 'disposing' | 'disposed'
  readonly maxAttached: number | undefined
  readonly busy: () => Busy
  readonly agents: PersistentMap<AgentRecord>
  /** How many agents have an attachment (closing ones included), and how many are closing. */
  readonly attached: number
  readonly closing: number
  readonly clock: number
  readonly uses: Uses
}

export type AgentsEvent =
  /** A new attachment, made from the agent's log (R64); with a bound, `busy` as the queues are now (R77). */
  | { type: 'ATTACHED'; attachment: AttachedAgent; busy?: Busy }
  /** A call used the agent (R77: the order of use). */
  | { type: 'USED'; attachment: AttachedAgent }
  /** A detach (R63), or `evicted` by the bound (R77): forgotten entirely once nothing waits. */
  | { type: 'CLOSE'; attachment: AttachedAgent; evicted?: boolean }
  /**
   * The attachment's actor stopped and its writes landed or were abandoned (R73), with the
   * settling of the appends it abandoned, if any, and which agents have calls in flight now.
   */
  | { type: 'CLOSED'; attachment: AttachedAgent; evicted: boolean; abandoned: Promise<void> | undefined; busy: Busy }
  /** An operation takes the abandoned appends' settling it is about to wait for (R73). */
  | { type: 'ABANDONED.TAKEN'; agentId: string }
  /** The abandoned appends settled. */
  | { type: 'ABANDONED.SETTLED'; agentId: string; settled: Promise<void> }
  /** A reload: every attachment closes, later calls fail (R60). */
  | { type: 'DISPOSE' }

/**
 * The agent's attachment for a call: a closing one until its close has resolved (its writes
 * landed, the appends it abandoned known): operations wait for it, reads see its last state (R60,
 * R73). Undefined when the agent has none: the next call attaches it.
 */
export function currentAttachment<A extends AttachedAgent>(context: AgentsContext, agentId: string): A | undefined {
  const record = context.agents.get(agentId)
  const current = record?.attachment
  return current !== undefined && (record!.closing || current.snapshot.status === 'active') ? (current as A) : undefined
}

/** The agent's attachment, closing or not, stopped or not (a `detach` closes it). */
export function attachmentOf<A extends AttachedAgent>(context: AgentsContext, agentId: string): A | undefined {
  return context.agents.get(agentId)?.attachment as A | undefined
}

/** Whether `attachment` is closing: its actor has not stopped yet, or its writes not landed (R73). */
export function isClosing(context: AgentsContext, attachment: AttachedAgent): boolean {
  const record = context.agents.get(attachment.agentId)
  return record?.attachment === attachment && record.closing
}

/** The generation the agent's next attachment has (R63). */
export function nextGeneration(context: AgentsContext, agentId: string): number {
  return (context.agents.get(agentId)?.generation ?? 0) + 1
}

/** The settling of the appends the agent's last close abandoned, until an operation took it (R73). */
export function abandonedOf(context: AgentsContext, agentId: string): Promise<void> | undefined {
  return context.agents.get(agentId)?.abandoned
}

/** The attached agents' ids, least recently used first (R77; in no particular order without a bound). */
export function attachedIds(context: AgentsContext): string[] {
  if (context.maxAttached === undefined) return [...context.agents.entries()].filter(([, r]) => r.attachment !== undefined).map(([id]) => id)
  return liveUses(context).map(([, id]) => id)
}

/** The live entries of the order of use, oldest first. */
function liveUses({ uses, agents }: AgentsContext): (readonly [number, string])[] {
  const live: (readonly [number, string])[] = []
  for (let i = uses.start; i < uses.end; i++) {
    const [used, id] = uses.buffer[i]!
    const record = agents.get(id)
    if (record?.attachment !== undefined && record.used === used) live.push(uses.buffer[i]!)
  }
  return live
}

/** The order of use with `agentId` used last at `clock`; compacted when most entries are stale. */
function used(context: AgentsContext, agentId: string, clock: number): Uses {
  if (context.maxAttached === undefined) return context.uses
  let { buffer, start, end } = context.uses
  if (end - start > 2 * context.attached + 64) {
    buffer = liveUses(context)
    start = 0
    end = buffer.length
  } else if (end !== buffer.length || start > Math.max(64, end - start)) {
    // Another state's entries follow ours, or the entries dropped before `start` outnumber ours.
    buffer = buffer.slice(start, end)
    end -= start
    start = 0
  }
  buffer.push([clock, agentId])
  return { buffer, start, end: end + 1 }
}

/** `record` written for its agent; a record that holds nothing any more is forgotten. */
function withRecord(agents: PersistentMap<AgentRecord>, agentId: string, record: AgentRecord): PersistentMap<AgentRecord> {
  const empty = record.attachment === undefined && record.generation === 0 && record.abandoned === undefined
  return empty ? agents.delete(agentId) : agents.set(agentId, record)
}

/** The effect of a close: the attachment lets its work land and stops (R60, R63, R73); `CLOSED` follows. */
function close(scope: AnyActorScope, context: AgentsContext, attachment: AttachedAgent, evicted: boolean): void {
  const { self } = scope
  scope.defer(() => {
    const closed = () => {
      const abandoned = attachment.hasAppendsInFlight ? attachment.appendsSettled() : undefined
      self.send({ type: 'CLOSED', attachment, evicted, abandoned, busy: context.busy() })
    }
    attachment.close().then(closed, closed)
  })
}

/** `context` with `attachment` closing (its close deferred), unless it is not its agent's or already closing. */
function closing(scope: AnyActorScope, context: AgentsContext, attachment: AttachedAgent, evicted: boolean): AgentsContext {
  const record = context.agents.get(attachment.agentId)
  if (record === undefined || record.attachment !== attachment || record.closing) return context
  close(scope, context, attachment, evicted)
  return { ...context, agents: context.agents.set(attachment.agentId, { ...record, closing: true }), closing: context.closing + 1 }
}

/**
 * R77: while more than the bound are attached, the least recently used agents that hold nothing
 * but what their log (and pending store) holds leave memory; the others stay, and so does the one
 * just attached.
 */
function leaveMemory(scope: AnyActorScope, context: AgentsContext, attached: AttachedAgent, busy: Busy): AgentsContext {
  if (context.maxAttached === undefined) return context
  let excess = context.attached - context.closing - context.maxAttached
  if (excess <= 0) return context
  let next = context
  const { buffer, end } = context.uses
  let { start } = context.uses
  // Oldest first; the entries before the first live one are dropped on the way.
  for (let i = start; i < end && excess > 0; i++) {
    const [usedAt, id] = buffer[i]!
    const { attachment, closing: isClosing, used } = next.agents.get(id) ?? {}
    if (attachment === undefined || used !== usedAt) {
      if (i === start) start++
      continue
    }
    if (attachment === attached || isClosing || busy.has(id)) continue
    if (!canLeaveMemory(attachment.snapshot, attachment.keepsPendingDurably)) continue
    excess--
    next = closing(scope, next, attachment, true)
  }
  return start === context.uses.start ? next : { ...next, uses: { buffer, start, end } }
}

/** Gone; a close that abandoned appends leaves their settling for the agent's next operation (R73). */
function closed(scope: AnyActorScope, context: AgentsContext, event: Extract<AgentsEvent, { type: 'CLOSED' }>): AgentsContext {
  const { attachment, evicted, abandoned, busy } = event
  const id = attachment.agentId
  const record = context.agents.get(id)
  if (record === undefined) return context
  const own = record.attachment === attachment
  let next: AgentRecord = own ? { ...record, attachment: undefined, closing: false } : record
  if (abandoned !== undefined) {
    next = { ...next, abandoned }
    const { self } = scope
    scope.defer(() => void abandoned.then(() => self.send({ type: 'ABANDONED.SETTLED', agentId: id, settled: abandoned })))
  }
  // An evicted agent is forgotten entirely once nothing waits for it (R63: it counts anew).
  if (evicted && next.attachment === undefined && !busy.has(id)) next = { ...next, generation: 0 }
  const state: AgentsContext = {
    ...context,
    agents: withRecord(context.agents, id, next),
    attached: own ? context.attached - 1 : context.attached,
    closing: own && record.closing ? context.closing - 1 : context.closing,
  }
  return state.phase === 'disposing' && state.attached === 0 && state.closing === 0 ? { ...state, phase: 'disposed' } : state
}

/** The registry's transition (pure but for the deferred effects). */
export function agentsTransition(context: AgentsContext, event: AgentsEvent, scope: AnyActorScope): AgentsContext {
  switch (event.type) {
    case 'ATTACHED': {
      if (context.phase !== 'serving') return context
      const { attachment } = event
      const id = attachment.agentId
      const record = context.agents.get(id)
      const clock = context.clock + 1
      const registered: AgentsContext = {
        ...context,
        agents: context.agents.set(id, { attachment, closing: false, generation: attachment.generation, used: clock, abandoned: record?.abandoned }),
        attached: record?.attachment === undefined ? context.attached + 1 : context.attached,
        clock,
      }
      if (context.maxAttached === undefined) return registered
      return leaveMemory(scope, { ...registered, uses: used(registered, id, clock) }, attachment, event.busy ?? NO_CALLS)
    }
    case 'USED': {
      const id = event.attachment.agentId
      const record = context.agents.get(id)
      if (context.phase !== 'serving' || record?.attachment !== event.attachment || record.closing) return context
      const clock = context.clock + 1
      return { ...context, agents: context.agents.set(id, { ...record, used: clock }), clock, uses: used(context, id, clock) }
    }
    case 'CLOSE':
      return closing(scope, context, event.attachment, event.evicted === true)
    case 'CLOSED':
      return closed(scope, context, event)
    case 'ABANDONED.TAKEN':
    case 'ABANDONED.SETTLED': {
      const record = context.agents.get(event.agentId)
      if (record?.abandoned === undefined || (event.type === 'ABANDONED.SETTLED' && record.abandoned !== event.settled)) return context
      return { ...context, agents: withRecord(context.agents, event.agentId, { ...record, abandoned: undefined }) }
    }
    case 'DISPOSE': {
      if (context.phase !== 'serving') return context
      // R60: every attachment closes.
      let next: AgentsContext = { ...context, phase: 'disposing' }
      for (const { attachment } of context.agents.values()) if (attachment !== undefined) next = closing(scope, next, attachment, false)
      return next.attached === 0 ? { ...next, phase: 'disposed' } : next
    }
  }
}

/** The registry of one service's agents (see the file's header). */
export const agentsLogic = fromTransition(
  agentsTransition,
  ({ input }: { input: AgentsInput }): AgentsContext => ({
    phase: 'serving',
    maxAttached: input.maxAttached,
    busy: input.busy,
    agents: PersistentMap.empty(),
    attached: 0,
    closing: 0,
    clock: 0,
    uses: { buffer: [], start: 0, end: 0 },
  }),
)
