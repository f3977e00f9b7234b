import { assign, setup } from 'xstate'
import { canLeaveMemory, type PlanModeSnapshot } from './planMode.view.js'

/**
 * The service's agents: which are attached, in the order of use (R77), which are closing, and
 * what a close left behind (R73). One actor per service; an agent's own state is its chart's.
 *
 * serving --DISPOSE--> disposing (every attachment closes) --all closed--> disposed
 *
 * An agent's lifecycle reads from here: attached (`ATTACHED`), serving, closing (`CLOSE`, a
 * detach, a reload or leaving memory, R60, R63, R77) until its actor stopped (`CLOSED`), then
 * gone; the next call attaches it again from the log (R64), once the appends its close abandoned
 * have settled (R73). The registry and the least-recently-used eviction are this chart's actions.
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

export interface AgentsInput {
  /** The bound of R77, or undefined: no agent leaves memory. */
  maxAttached: number | undefined
  /** Whether a call of the agent has not settled yet: such an agent stays (R77). */
  isBusy: (agentId: string) => boolean
}

export interface AgentsContext extends AgentsInput {
  /**
   * The attached agents by id, least recently used first (R77). The maps and the set are updated
   * in place by the actions below: the service touches one entry per call, whatever the count.
   */
  attached: Map<string, AttachedAgent>
  /** Attachments being closed, until their actors stopped: they still answer reads. */
  closing: Set<AttachedAgent>
  /** How many attachments each agent has had: an exit call tells a detach by it (R63). */
  generations: Map<string, number>
  /** Per agent, the settling of the appends a close abandoned (R73): its next operation waits for it. */
  abandoned: Map<string, Promise<void>>
}

export type AgentsEvent =
  /** A new attachment, made from the agent's log (R64). */
  | { type: 'ATTACHED'; attachment: AttachedAgent }
  /** A call used the agent (R77: the order of use). */
  | { type: 'USED'; attachment: AttachedAgent }
  /** A detach (R63), or `evicted` by the bound (R77): forgotten entirely once nothing waits. */
  | { type: 'CLOSE'; attachment: AttachedAgent; evicted?: boolean }
  /** The attachment's actor stopped and its writes landed or were abandoned (R73). */
  | { type: 'CLOSED'; attachment: AttachedAgent; evicted: boolean }
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
  const current = context.attached.get(agentId)
  return current !== undefined && (current.snapshot.status === 'active' || context.closing.has(current)) ? (current as A) : undefined
}

/** The generation the agent's next attachment has (R63). */
export function nextGeneration(context: AgentsContext, agentId: string): number {
  return (context.generations.get(agentId) ?? 0) + 1
}

export const agentsMachine = setup({
  types: {} as { context: AgentsContext; events: AgentsEvent; input: AgentsInput },
  guards: {
    /** Every attachment has closed: nothing is attached or closing any more (R60). */
    hasClosedAll: ({ context }) => context.closing.size === 0 && context.attached.size === 0,
    isNotClosing: ({ context, event }) => event.type === 'CLOSE' && !context.closing.has(event.attachment),
  },
  actions: {
    /** The new attachment is the agent's, its most recently used (R77). */
    register: assign(({ context, event }) => {
      if (event.type !== 'ATTACHED') return {}
      const { attachment } = event
      context.generations.set(attachment.agentId, attachment.generation)
      context.attached.delete(attachment.agentId)
      context.attached.set(attachment.agentId, attachment)
      return {}
    }),
    /** Least recently used last out (R77): the map's order is the order of use. */
    touch: assign(({ context, event }) => {
      if (event.type !== 'USED' || context.closing.has(event.attachment)) return {}
      context.attached.delete(event.attachment.agentId)
      context.attached.set(event.attachment.agentId, event.attachment)
      return {}
    }),
    /**
     * R77: while more than the bound are attached, the least recently used agents that hold
     * nothing but what their log (and pending store) holds leave memory; the others stay, and so
     * does the one just attached.
     */
    leaveMemory: ({ context, event, self }) => {
      if (context.maxAttached === undefined || event.type !== 'ATTACHED') return
      let excess = context.attached.size - context.closing.size - context.maxAttached
      for (const [id, attachment] of context.attached) {
        if (excess <= 0) return
        if (attachment === event.attachment || context.closing.has(attachment) || context.isBusy(id)) continue
        if (!canLeaveMemory(attachment.snapshot, attachment.keepsPendingDurably)) continue
        excess--
        self.send({ type: 'CLOSE', attachment, evicted: true })
      }
    },
    markClosing: assign(({ context, event }) => {
      if (event.type === 'CLOSE') context.closing.add(event.attachment)
      return {}
    }),
    /** The attachment lets its work land and stops (R60, R63, R73); `CLOSED` follows. */
    close: ({ event, self }) => {
      if (event.type !== 'CLOSE') return
      const { attachment, evicted = false } = event
      const closed = () => self.send({ type: 'CLOSED', attachment, evicted })
      attachment.close().then(closed, closed)
    },
    /**
     * Gone; a close that abandoned appends leaves their settling for the agent's next operation
     * (R73); an evicted agent is forgotten entirely once nothing waits for it (R63).
     */
    forget: assign(({ context, event, self }) => {
      if (event.type !== 'CLOSED') return {}
      const { attachment, evicted } = event
      const id = attachment.agentId
      context.closing.delete(attachment)
      if (context.attached.get(id) === attachment) context.attached.delete(id)
      if (attachment.hasAppendsInFlight) {
        // Told only to a registry still running: after dispose nothing waits for the settling.
        const settled: Promise<void> = attachment.appendsSettled().then(() => {
          if (self.getSnapshot().status === 'active') self.send({ type: 'ABANDONED.SETTLED', agentId: id, settled })
        })
        context.abandoned.set(id, settled)
      }
      if (evicted && !context.attached.has(id) && !context.isBusy(id)) context.generations.delete(id)
      return {}
    }),
    dropAbandoned: assign(({ context, event }) => {
      if (event.type === 'ABANDONED.TAKEN') context.abandoned.delete(event.agentId)
      if (event.type === 'ABANDONED.SETTLED' && context.abandoned.get(event.agentId) === event.settled) context.abandoned.delete(event.agentId)
      return {}
    }),
    /** R60: every attachment closes. */
    closeAll: ({ context, self }) => {
      for (const attachment of new Set(context.attached.values())) self.send({ type: 'CLOSE', attachment })
    },
  },
}).createMachine({
  id: 'agents',
  context: ({ input }) => ({ ...input, attached: new Map(), closing: new Set(), generations: new Map(), abandoned: new Map() }),
  on: {
    CLOSE: { guard: 'isNotClosing', actions: ['markClosing', 'close'] },
    CLOSED: { actions: 'forget' },
    'ABANDONED.TAKEN': { actions: 'dropAbandoned' },
    'ABANDONED.SETTLED': { actions: 'dropAbandoned' },
  },
  initial: 'serving',
  states: {
    serving: {
      on: {
        ATTACHED: { actions: ['register', 'leaveMemory'] },
        USED: { actions: 'touch' },
        DISPOSE: { target: 'disposing', actions: 'closeAll' },
      },
    },
    /** Every attachment closes (the `CLOSE`s just sent); calls fail from now on (R60). */
    disposing: {
      always: { guard: 'hasClosedAll', target: 'disposed' },
    },
    disposed: { type: 'final' },
  },
})

