import { createPostgresPlanStore, pgliteListen, type PostgresPlanStore, type PostgresSessionLog } from '../src/adapters/postgres.js'
import { createPlanMode, type PlanAgent, type UserMessage } from '../src/index.js'
import { defineConformanceSuite, defineDurableReviewSuite, type ConformanceAgent, type DurableConformanceAgent } from '../src/testing/index.js'
import { usePGlite } from './databases.js'
import { createReviewQueue, driverBasics, durableReviewUi } from './fixtures/conformance-host.js'

/**
 * The conformance kit on a host whose log is PostgreSQL (R83–R85, on PGlite): every restart is a
 * new instance (a new store over the same database), which loads the session from its checkpoint
 * and tail and keeps P in the database's pending store.
 */
const SECTION = 'PLAN MODE: explore and design; present the plan with exit_plan_mode.'

const lite = usePGlite()
let hosts = 0

/** A new instance over the database: its store, and the session of `sessionId` opened on it. */
async function instanceOf(prefix: string, sessionId: string): Promise<{ store: PostgresPlanStore; log: PostgresSessionLog }> {
  const store = createPostgresPlanStore({ db: lite(), listen: pgliteListen(lite()), prefix })
  await store.migrate()
  return { store, log: await store.openSession(sessionId) }
}

async function channelAgent(prefix: string): Promise<ConformanceAgent> {
  const { store, log } = await instanceOf(prefix, 'agent-1')
  const reviews = createReviewQueue()
  const planMode = createPlanMode({ section: SECTION, review: reviews.channel, pendingStore: store.pendingStore, checkpoints: { store: store.checkpoints }, logger: { warn: () => {} } })
  const steered: UserMessage[] = []
  const agent: PlanAgent = { id: 'agent-1', session: log, steer: (message) => steered.push(message) }
  return {
    ...driverBasics(log, planMode, agent),
    nextReview: reviews.nextReview,
    steered: () => steered,
    async restart() {
      await planMode.dispose()
      await store.close()
      return channelAgent(prefix)
    },
  }
}

async function durableAgent(prefix: string): Promise<DurableConformanceAgent> {
  const { store, log } = await instanceOf(prefix, 'agent-1')
  const planMode = createPlanMode({ section: SECTION, review: 'durable', pendingStore: store.pendingStore, checkpoints: { store: store.checkpoints }, logger: { warn: () => {} } })
  const agent: PlanAgent = { id: 'agent-1', session: log }
  return {
    ...driverBasics(log, planMode, agent),
    ...durableReviewUi(planMode, agent),
    async restart() {
      await planMode.dispose()
      await store.close()
      return durableAgent(prefix)
    },
  }
}

defineConformanceSuite({
  name: 'PostgreSQL log (PGlite), a new instance at each restart',
  createHost: () => ({ section: SECTION, createAgent: () => channelAgent(`c${++hosts}_`) }),
})

defineDurableReviewSuite({
  name: 'PostgreSQL log (PGlite), a new instance for each request',
  createHost: () => ({ section: SECTION, createAgent: () => durableAgent(`d${++hosts}_`) }),
})
