import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages'
import { Command, MemorySaver } from '@langchain/langgraph'
import type { RunnableConfig } from '@langchain/core/runnables'
import type { Checkpoint, CheckpointMetadata, PendingWrite } from '@langchain/langgraph-checkpoint'
import { describe, expect, it } from 'vitest'
import { createLangGraphPlanMode, type PlanGraphState } from '../src/adapters/langgraph.js'
import { createPlanMode, type SessionEvent } from '../src/index.js'
import { ENTERING, PLAN, SECTION } from './helpers.js'
import { compile, readFile } from './langgraph.fixture.js'

/**
 * Crash safety of the LangGraph log (R145): plan mode's events commit with the graph's checkpoint,
 * so a process killed at any write of a step loses no notice and no outcome. The checkpointer is
 * the process's only way to the disk: "killed at write k" is a checkpointer whose k-th write (put
 * or putWrites) fails and after which nothing is written; the restart is a new service, adapter and
 * graph on a copy of what was written, which drives the thread to the end. Every write point of the
 * step is tried (bounded: the number of writes of the step run without a crash).
 */

/** When LangGraph writes a step's checkpoint: before the next step starts, or beside it. */
type Durability = 'sync' | 'async'

/** A MemorySaver that dies at its `crashAt`-th write (counted from 0), never writing again. */
class CrashingSaver extends MemorySaver {
  writesSeen = 0
  crashAt = Number.POSITIVE_INFINITY
  #dead = false
  #write(): void {
    if (this.#dead || this.writesSeen++ === this.crashAt) {
      this.#dead = true
      throw new Error('killed')
    }
  }
  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata): Promise<RunnableConfig> {
    this.#write()
    return super.put(config, checkpoint, metadata)
  }
  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
    this.#write()
    return super.putWrites(config, writes, taskId)
  }
  /** What a restarted process finds on the disk: a copy of what was written. */
  disk(): MemorySaver {
    const restarted = new MemorySaver()
    restarted.storage = structuredClone(this.storage)
    restarted.writes = structuredClone(this.writes)
    return restarted
  }
}

const FEEDBACK = 'Add a verification step.'
const KEEP = { answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: FEEDBACK }] }
const KEPT_TEXT = `The user chose to keep planning; their feedback: ${FEEDBACK}`
const config = { configurable: { thread_id: 'crash' } }

/** The model, a function of what it sees (a restart asks it again): plans when asked, revises after feedback, else answers. */
function model(state: PlanGraphState): { messages: BaseMessage[] } {
  const last = state.messages.at(-1)
  if (HumanMessage.isInstance(last) && last.content === 'Plan the migration.') {
    return { messages: [new AIMessage({ content: 'My plan.', tool_calls: [{ id: 'call-exit-1', name: 'exit_plan_mode', args: { plan: PLAN } }] })] }
  }
  if (ToolMessage.isInstance(last) && last.tool_call_id === 'call-exit-1') return { messages: [new AIMessage('Revising the plan.')] }
  return { messages: [new AIMessage('Noted.')] }
}

/** One process of the host on `saver`. */
async function processOn(saver: MemorySaver, durability: Durability) {
  const planMode = createPlanMode({ section: SECTION, review: 'durable', logger: { warn: () => {} } })
  const lg = await createLangGraphPlanMode({ planMode, tools: [readFile] })
  const graph = await compile(lg, model, saver)
  const run = { ...config, durability }
  return { planMode, lg, graph, run }
}

type Process = Awaited<ReturnType<typeof processOn>>

/**
 * Drives the thread to its end after a restart, as a host recovers a run: sends the user's message
 * again when the thread never took it, answers a review still asking with `answer`, and continues
 * a step that did not finish (`invoke(null)`: LangGraph keeps the writes of the nodes that finished).
 */
async function finish(host: Process, input: string | null, answer: unknown): Promise<void> {
  for (let round = 0; round < 10; round++) {
    const state = await host.graph.getState(config)
    const values = state.values as PlanGraphState
    if (input !== null && !texts(values.messages ?? []).includes(input)) {
      await host.graph.invoke({ messages: [new HumanMessage(input)] }, host.run)
      continue
    }
    if (state.next.length === 0 && state.tasks.length === 0) return
    const asking = state.tasks.find((task) => task.interrupts.length > 0 && task.result === undefined)
    const reviewId = (asking?.interrupts[0]?.value as { reviewId?: string } | undefined)?.reviewId
    await host.graph.invoke(asking ? new Command({ resume: { ...(answer as object), reviewId } }) : null, host.run)
  }
  throw new Error('the thread did not finish in 10 runs')
}

const texts = (messages: readonly BaseMessage[]) => messages.map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))

/**
 * Runs `setup` without a crash, then `step` once per write point with the process killed there,
 * restarts on what was written and checks `invariant` on the finished thread.
 */
async function everyKillPoint(
  durability: Durability,
  setup: (host: Process) => Promise<void>,
  step: (host: Process) => Promise<unknown>,
  input: string | null,
  answer: unknown,
  invariant: (values: PlanGraphState) => void,
): Promise<number> {
  let points = Number.POSITIVE_INFINITY
  for (let k = -1; k < points; k++) {
    const saver = new CrashingSaver()
    const first = await processOn(saver, durability)
    await setup(first)
    const before = saver.writesSeen
    if (k >= 0) saver.crashAt = before + k
    await step(first).catch(() => {})
    if (k < 0) points = saver.writesSeen - before // the step's writes, counted once without a crash
    await first.planMode.dispose()
    const second = await processOn(saver.disk(), durability)
    await finish(second, input, answer)
    const values = (await second.graph.getState(config)).values as PlanGraphState
    try {
      invariant(values)
    } catch (error) {
      throw new Error(`killed at write ${k} of ${points}: ${(error as Error).message}`, { cause: error })
    }
    await second.planMode.dispose()
  }
  return points
}

describe('xstate-plan-mode/langgraph: crash safety', () => {
  for (const durability of ['async', 'sync'] as const) {
    it(`R145: killed at every write of the step that tells a mode switch, the thread tells the notice once (durability ${durability})`, async () => {
      const points = await everyKillPoint(
        durability,
        async (host) => {
          await host.graph.invoke({ messages: [new HumanMessage('Hi.')] }, host.run)
          const agent = await host.lg.agent(host.graph, config)
          await host.planMode.set(agent, true) // idle: committed to the thread's state
        },
        (host) => host.graph.invoke({ messages: [new HumanMessage('Plan it.')] }, host.run),
        'Plan it.',
        null,
        (values) => {
          const told = texts(values.messages)
          expect(told.filter((text) => text.includes(ENTERING))).toHaveLength(1)
          // The notice reached the model: a model answer follows it.
          expect(told.slice(told.findIndex((text) => text.includes(ENTERING)))).toContain('Noted.')
          expect(values.planLog.filter((e: SessionEvent) => e.type === 'plan/mode')).toHaveLength(1)
        },
      )
      expect(points).toBeGreaterThan(3)
    })

    it(`R145: killed at every write of the step that records a review's answer, the outcome is recorded and told once (durability ${durability})`, async () => {
      const points = await everyKillPoint(
        durability,
        async (host) => {
          const agent = await host.lg.agent(host.graph, config)
          await host.planMode.set(agent, true)
          await host.graph.invoke({ messages: [new HumanMessage('Plan the migration.')] }, host.run)
        },
        async (host) => {
          const { reviewId } = host.planMode.openReview(await host.lg.agent(host.graph, config))!
          return host.graph.invoke(new Command({ resume: { ...KEEP, reviewId } }), host.run)
        },
        null,
        KEEP,
        (values) => {
          const results = values.messages.filter((m) => ToolMessage.isInstance(m) && m.tool_call_id === 'call-exit-1')
          expect(texts(results)).toEqual([KEPT_TEXT])
          const told = texts(values.messages)
          expect(told.slice(told.indexOf(KEPT_TEXT))).toContain('Revising the plan.')
          const closing = values.planLog.filter((e: SessionEvent) => e.type === 'plan/review' && (e.data as { outcome: string }).outcome !== 'requested')
          expect(closing.map((e) => e.data)).toEqual([expect.objectContaining({ outcome: 'keep-planning', feedback: FEEDBACK, toldInResult: true })])
        },
      )
      expect(points).toBeGreaterThan(3)
    })
  }
})
