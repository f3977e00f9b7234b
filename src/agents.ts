import { createActor, waitFor } from 'xstate'
import { Attachment, type AttachmentSettings } from './attachment.js'
import { DISPOSED_MESSAGE } from './machines/calls.machine.js'
import { abandonedOf, agentsLogic, attachmentOf as registered, currentAttachment, isClosing as isStillClosing, nextGeneration } from './machines/agents.machine.js'
import type { PlanModeEmitted, PlanModeEvent } from './machines/planMode.events.js'
import { isThenable } from './machines/planMode.effects.js'
import { isAppending, isClosing } from './machines/planMode.view.js'
import { createQueue, takeTurn } from './machines/queue.machine.js'
import { waitAtMost } from './timeouts.js'
import type { PlanAgent } from './types.js'

/** An operation called before `dispose` whose turn had not come fails with this (R60). */
export const DISPOSED_BEFORE_TURN_MESSAGE = "plan-mode service was disposed before this call's turn came; nothing was done"

/** A service's agents, as its facade reaches them: the registry chart and the queue of each agent's operations. */
export interface Agents {
  /** Whether `dispose` was called (R60). */
  isDisposed(): boolean
  /**
   * The agent's attachment for a read: a closing one until it stopped, else a new one from the log
   * (R64). @throws after `dispose` (R60), and on a log that cannot attach (R61).
   */
  attachmentOf(agent: PlanAgent): Attachment
  /**
   * Runs one operation of the agent in its turn (§1): on the attachment current when the turn
   * comes, once no append is in flight; sends the event and reads what the chart told (`kinds`).
   * `precondition` may refuse it by throwing when its turn has come. Called after `dispose` it
   * fails at once; called before but still waiting when `dispose` came, it fails with
   * `disposedBeforeTurn` when its turn comes, having done nothing (R60).
   */
  perform<K extends PlanModeEmitted['type'], T>(
    agent: PlanAgent,
    event: PlanModeEvent,
    kinds: readonly K[],
    read: (told: PlanModeEmitted & { type: K }, attachment: Attachment) => T,
    precondition?: (attachment: Attachment) => void,
    disposedBeforeTurn?: string,
  ): Promise<Awaited<T>>
  /** Closes the agent's attachment, if it has one (R63). */
  detach(agent: PlanAgent): void
  /** A reload: every attachment closes (R60); resolves once all have. */
  dispose(): Promise<void>
}

/** Starts the agents of one service: its registry (`agentsLogic`) and its agents' queues of operations (`queueLogic`). */
export function serveAgents(settings: AttachmentSettings, maxAttached: number | undefined): Agents {
  const queue = createQueue()
  /** Which agents have a call not settled yet (R77): the queues as they are now. */
  const busy = () => queue.getSnapshot().context.queues
  const agents = createActor(agentsLogic, { input: { maxAttached, busy } }).start()
  const isDisposed = () => agents.getSnapshot().context.phase !== 'serving'

  function attachmentOf(agent: PlanAgent): Attachment {
    const { context } = agents.getSnapshot()
    if (context.phase !== 'serving') throw new Error(DISPOSED_MESSAGE)
    const current = currentAttachment<Attachment>(context, agent.id)
    if (current !== undefined) {
      if (maxAttached !== undefined) agents.send({ type: 'USED', attachment: current })
      return current.follow(agent)
    }
    const attachment = new Attachment(agent, settings, nextGeneration(context, agent.id)) // throws on an invalid log (R61)
    agents.send(maxAttached === undefined ? { type: 'ATTACHED', attachment } : { type: 'ATTACHED', attachment, busy: busy() })
    return attachment
  }

  /** Resolves once `attachment` has closed: its actor stopped, its writes landed or were abandoned (R73). */
  function closed(attachment: Attachment): Promise<unknown> {
    agents.send({ type: 'CLOSE', attachment })
    return waitFor(agents, (s) => !isStillClosing(s.context, attachment))
  }

  /** Resolves at `dispose`, or rejects once `ms` have passed. */
  function disposal(ms: number): Promise<unknown> {
    const disposed = waitFor(agents, (s) => s.context.phase !== 'serving', { timeout: ms })
    disposed.catch(() => {}) // the wait that raced it decides
    return disposed
  }

  function perform<K extends PlanModeEmitted['type'], T>(
    agent: PlanAgent,
    event: PlanModeEvent,
    kinds: readonly K[],
    read: (told: PlanModeEmitted & { type: K }, attachment: Attachment) => T,
    precondition?: (attachment: Attachment) => void,
    disposedBeforeTurn = DISPOSED_BEFORE_TURN_MESSAGE,
  ): Promise<Awaited<T>> {
    if (isDisposed()) return Promise.reject(new Error(DISPOSED_MESSAGE))
    return takeTurn(queue, agent.id, (end) => {
      const run = (): Promise<Awaited<T>> => {
        if (isDisposed()) throw new Error(disposedBeforeTurn)
        // An append abandoned by a close may still land: decide once the log holds it, or once
        // another close timeout has passed (R73).
        const prior = abandonedOf(agents.getSnapshot().context, agent.id)
        if (prior !== undefined) {
          agents.send({ type: 'ABANDONED.TAKEN', agentId: agent.id })
          return waitAtMost(settings.closeTimeout, Promise.race([prior, disposal(settings.closeTimeout)])).then(run)
        }
        const attachment = attachmentOf(agent)
        // Work behind a detach runs on the next attachment, replayed once all of it landed.
        if (isClosing(attachment.snapshot)) return closed(attachment).then(run, run)
        // A review's record started outside the queue lands first.
        if (isAppending(attachment.snapshot)) return attachment.quiet().then(run, run)
        precondition?.(attachment)
        return attachment.operate(event, kinds, (told) => {
          // What the chart told is the result. Unless the operation waits for more (a review's
          // closing, the pending store's write), its caller settles with it now (`end(outcome)`).
          const final = !attachment.writesStore
          let value: T
          try {
            value = read(told, attachment)
          } catch (error) {
            end(final ? { ok: false, error } : undefined)
            throw error
          }
          end(final && !isThenable(value) ? { ok: true, value } : undefined)
          return value
        }) as Promise<Awaited<T>>
      }
      return run()
    })
  }

  return {
    isDisposed,
    attachmentOf,
    perform,
    detach(agent) {
      if (isDisposed()) throw new Error(DISPOSED_MESSAGE)
      const attachment = registered<Attachment>(agents.getSnapshot().context, agent.id)
      if (attachment) agents.send({ type: 'CLOSE', attachment })
    },
    async dispose() {
      if (isDisposed()) return
      agents.send({ type: 'DISPOSE' })
      await waitFor(agents, (s) => s.context.phase === 'disposed')
    },
  }
}
