import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { END, MemorySaver, START, StateGraph } from '@langchain/langgraph'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLangGraphPlanMode } from '../src/adapters/langgraph.js'
import { openJsonlSessionLog, type JsonlSessionLog } from '../src/adapters/jsonl.js'
import { createPostgresPlanStore, pgliteListen, type PostgresPlanStore, type PostgresSessionLog } from '../src/adapters/postgres.js'
import { createMemorySessionLog, createPlanMode, type SessionLog } from '../src/index.js'
import { defineSessionLogSuite } from '../src/testing/index.js'
import { usePGlite } from './databases.js'

/** The session log conformance suite (R151) on every log the package has, and on LangGraph's. */

defineSessionLogSuite('the memory log', { persistent: false, open: () => createMemorySessionLog() }, { describe, it })

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plan-mode-log-suite-'))
})
afterAll(() => rm(dir, { recursive: true, force: true }))
defineSessionLogSuite(
  'the JSONL log',
  { persistent: true, open: (id) => openJsonlSessionLog(join(dir, `${id}.jsonl`)), close: (log) => (log as JsonlSessionLog).close() },
  { describe, it },
)

const lite = usePGlite()
const stores = new Map<SessionLog, PostgresPlanStore>()
defineSessionLogSuite(
  'the PostgreSQL log (PGlite)',
  {
    persistent: true,
    async open(id) {
      // Each open is a new instance over the database, as after a restart.
      const store = createPostgresPlanStore({ db: lite(), listen: pgliteListen(lite()), prefix: 'suite_' })
      await store.migrate()
      const log = await store.openSession(id)
      stores.set(log, store)
      return log
    },
    async close(log) {
      await (log as PostgresSessionLog).close()
      await stores.get(log)?.close()
      stores.delete(log)
    },
  },
  { describe, it },
)

// LangGraph: the thread's planLog channel on one checkpointer; each open is a new process (a new
// service, adapter and graph) that reads the thread from the checkpointer.
const saver = new MemorySaver()
defineSessionLogSuite(
  'the LangGraph log (a thread\'s planLog channel)',
  {
    persistent: true,
    async open(id) {
      const planMode = createPlanMode({ section: 'Plan first.', review: 'durable' })
      const lg = await createLangGraphPlanMode({ planMode })
      const graph = new StateGraph(lg.State).addNode('agent', () => ({})).addEdge(START, 'agent').addEdge('agent', END).compile({ checkpointer: saver })
      return (await lg.agent(graph, { configurable: { thread_id: id } })).session
    },
  },
  { describe, it },
)

describe('checkSessionLog', () => {
  it('R151: runs every scenario and rejects a log that breaks the seq contract, naming the scenario', async () => {
    const { checkSessionLog } = await import('../src/testing/index.js')
    await checkSessionLog({ persistent: false, open: () => createMemorySessionLog() })
    // A log that numbers from 0.
    const skewed = {
      persistent: false,
      open(): SessionLog {
        const inner = createMemorySessionLog()
        const events: { seq: number; type: string; data: unknown }[] = []
        return {
          events,
          subscribe: (listener) => inner.subscribe((event) => listener({ ...event, seq: event.seq - 1 })),
          append(type, data) {
            const event = { ...inner.append(type, data) as { seq: number; type: string; data: unknown }, seq: events.length }
            events.push(event)
            return event
          },
        }
      },
    }
    await expect(checkSessionLog(skewed)).rejects.toThrow(
      'appends get seq 1, 2, 3 and resolve with the event, which `events` then holds: session log conformance: append 0 resolved {"data":{},"seq":0,"type":"turn/start"}',
    )
  })
})
