import pg from 'pg'
import { createPlanMode, type PlanAgent } from 'xstate-plan-mode'
import { createPostgresPlanStore, pgListen, type PgListen, type PgQueryable } from 'xstate-plan-mode/postgres'

/**
 * A PostgreSQL server: a pool for the queries, a connection of its own for LISTEN. The timeouts
 * make a server that stops answering (a partition, a frozen host) fail the append instead of
 * leaving it to TCP's minutes.
 */
export function onServer(config: pg.PoolConfig): { db: pg.Pool; listen: PgListen } {
  const db = new pg.Pool({ query_timeout: 10_000, connectionTimeoutMillis: 5_000, ...config })
  db.on('error', () => {}) // a lost idle connection: the next query reports it
  const listen = pgListen(async () => {
    const client = new pg.Client(config)
    await client.connect()
    return client
  })
  return { db, listen }
}

/**
 * One instance of the host (a process behind the load balancer). Every instance runs the same
 * code on the same database: a `/plan` typed on one applies at the next step on another, a review
 * opened on one is answered on another, and two instances never both flip the same agent.
 */
export async function startInstance(db: PgQueryable, listen: PgListen) {
  const store = createPostgresPlanStore({ db, listen })
  await store.migrate() // safe from every instance at once
  const planMode = createPlanMode({
    section: 'Plan mode is on: explore read-only, then present the plan with exit_plan_mode.',
    review: 'durable',
    pendingStore: store.pendingStore,
    checkpoints: { store: store.checkpoints },
  })
  /** The agent of a session: its checkpoint and the events after it, then every instance's appends. */
  const agent = async (sessionId: string): Promise<PlanAgent> => ({ id: sessionId, session: await store.openSession(sessionId) })
  const close = async () => {
    await planMode.dispose()
    await store.close()
  }
  return { planMode, agent, close }
}
