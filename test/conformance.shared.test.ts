/**
 * The conformance kit (`xstate-plan-mode/testing`) run against a host that shares one service
 * among all its agents, as a multi-agent server does:
 *
 * - one `createPlanMode` and so one `ReviewChannel` for every agent: the channel routes each
 *   question by `request.agent.id` to that agent's driver (`nextReview`);
 * - `/plan` is NOT logged as `command/run`/`command/done`: a selection made after a turn's last
 *   step survives `restart()` through a durable pending store (a JSON file) instead (R64);
 * - `step()` is the boundary then a `request/header`, whether or not a turn is open.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { openJsonlPendingStore } from '../src/node.js'
import {
  createMemorySessionLog,
  createPlanMode,
  type PlanAgent,
  type PlanMode,
  type SessionLog,
  type UserMessage,
} from '../src/index.js'
import { defineConformanceSuite, type ConformanceAgent, type ConformanceReview } from '../src/testing/index.js'
import { createReviewQueue } from './fixtures/conformance-host.js'

const SECTION = 'PLAN MODE (shared service): explore and design; present the plan with exit_plan_mode.'

/** A host process: one service for all agents, a review inbox per agent id, a pending store file. */
async function createSharedHost() {
  const dir = await mkdtemp(join(tmpdir(), 'plan-mode-shared-'))
  const inboxes = new Map<string, ReturnType<typeof createReviewQueue>>()
  const inbox = (id: string) => {
    let box = inboxes.get(id)
    if (!box) inboxes.set(id, (box = createReviewQueue()))
    return box
  }
  /** Starts (or restarts) the host's one service over the pending store file. */
  const start = (): PlanMode =>
    createPlanMode(
      {
        section: SECTION,
        pendingStore: openJsonlPendingStore(join(dir, 'pending.json'), { fsync: false }),
        logger: { warn: () => {} },
        // One channel for every agent: each question goes to its agent's inbox.
        review: { ask: (request) => inbox(request.agent.id).channel.ask(request) },
      },
    )
  const host = {
    planMode: start(),
    /** A process restart: the service goes (a reload), a new one reads the same store. */
    async restart() {
      await host.planMode.dispose()
      host.planMode = start()
    },
    nextReview(agentId: string): Promise<ConformanceReview> {
      return inbox(agentId).nextReview()
    },
    async dispose() {
      await host.planMode.dispose()
      await rm(dir, { recursive: true, force: true })
    },
  }
  return host
}

type SharedHost = Awaited<ReturnType<typeof createSharedHost>>

/** The driver of one agent of the shared host. `/plan` is run without logging it. */
function sharedAgent(host: SharedHost, id: string, log: SessionLog = createMemorySessionLog()): ConformanceAgent {
  const steered: UserMessage[] = []
  const agent: PlanAgent = { id, session: log, steer: (message) => steered.push(message) }
  return {
    events: () => log.events,
    startTurn: async () => void (await log.append('turn/start', {})),
    endTurn: async () => void (await log.append('turn/end', {})),
    async step({ signal } = {}) {
      const { section, messages } = await host.planMode.stepBoundary(agent, signal ? { signal } : {})
      if (signal?.aborted) return { section: '', notices: [] }
      await log.append('request/header', {})
      return { section, notices: messages.map((m) => (m.content[0] as { text: string }).text) }
    },
    command: (rawInput, attachments) => host.planMode.command.run({ agent, rawInput, ...(attachments ? { attachments } : {}) }),
    get: () => host.planMode.get(agent),
    callExitTool: (args, { signal } = {}) =>
      host.planMode.exitTool
        .execute(args, { agent, ...(signal ? { signal } : {}) })
        .catch((error: Error) => ({ error: error.message })),
    nextReview: () => host.nextReview(id),
    steered: () => steered,
    async restart() {
      await host.restart()
      return sharedAgent(host, id, log)
    },
  }
}

let agents = 0
defineConformanceSuite({
  name: 'one service shared by all agents, reviews routed by agent id, a pending store instead of logged commands',
  async createHost() {
    const host = await createSharedHost()
    // A bystander on the same service, in plan mode with a review open: its question must never
    // reach the agent under test.
    const bystander = sharedAgent(host, 'bystander')
    await bystander.command('')
    void bystander.callExitTool({ plan: '# Not yours\n1. Ignore me.' })
    await host.nextReview('bystander')
    return {
      section: SECTION,
      createAgent: () => sharedAgent(host, `agent-${++agents}`),
      dispose: () => host.dispose(),
    }
  },
})

describe('the shared-service conformance host', () => {
  it('R43: two agents on one service each get their own review question, routed by agent id', async () => {
    const host = await createSharedHost()
    try {
      const [a, b] = [sharedAgent(host, 'a'), sharedAgent(host, 'b')]
      await a.command('')
      await b.command('')
      const callB = b.callExitTool({ plan: '# B\n1. b.' })
      const callA = a.callExitTool({ plan: '# A\n1. a.' })
      const reviewA = await a.nextReview()
      const reviewB = await b.nextReview()
      expect((reviewA.request.questions[0] as { detail: string }).detail).toBe('# A\n1. a.')
      expect((reviewB.request.questions[0] as { detail: string }).detail).toBe('# B\n1. b.')
      reviewB.answer({ answers: [{ id: 'plan-review', selected: ['Approve'] }] })
      reviewA.dismiss()
      expect(await callB).toEqual({ approved: true })
      expect(await callA).toEqual({
        error: 'The user dismissed the plan review to speak instead; stay in plan mode, stop here, and wait for their message.',
      })
      expect([a.get(), b.get()]).toEqual([{ active: true }, { active: true, pending: false }])
    } finally {
      await host.dispose()
    }
  })

  it("R64: without logged commands, the pending store is what keeps a /plan made after a turn's last step", async () => {
    const host = await createSharedHost()
    try {
      const agent = sharedAgent(host, 'a')
      await agent.startTurn()
      await agent.step()
      await agent.command('')
      await agent.endTurn()
      expect(agent.events().map((e) => e.type)).toEqual(['turn/start', 'request/header', 'turn/end'])
      const restarted = await agent.restart!()
      expect(restarted.get()).toEqual({ active: false, pending: true })
    } finally {
      await host.dispose()
    }
  })
})
