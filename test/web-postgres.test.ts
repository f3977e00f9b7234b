import { afterEach, expect, it, vi } from 'vitest'
import { createPostgresPlanStore, pgliteListen, type PgQueryable, type PostgresSessionLog } from '../src/adapters/postgres.js'
import { createPlanMode, type PlanAgent } from '../src/index.js'
import { REVIEW_MESSAGES } from '../src/plan/review.js'
import { SECTION, startWebChat } from '../apps/web/server.js'
import { usePGlite } from './databases.js'
import { webClient } from './web-client.js'

/**
 * The web demo on a database another instance writes to as well (R84): a decision it makes on a
 * view another instance has just made stale is refused (nothing written), and the demo decides
 * again on the new state; the user never sees the refusal of a toggle that can still be applied.
 * The other instance's append is made to land right before each of the demo's first decisions
 * by a connection that lets it in first (as a busy second instance would, at random).
 */
const PLAN = '# Migrate the users table\n\n1. Add the column.\n2. Backfill it.'

const closers: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => {})
})

/** One PGlite for the file (it takes seconds to start); each test has a chat of its own. */
const lite = usePGlite()

/** The demo on the database, and another instance (a store of its own) with the chat open. */
async function contended(chat: string) {
  let other: PostgresSessionLog | undefined
  const firstWrites = { type: '', left: 0 }
  /** The demo's connection: before its append of `firstWrites.type`, the other instance's append lands. */
  const db: PgQueryable = {
    async query(text, params) {
      if (firstWrites.left > 0 && params?.includes(firstWrites.type)) {
        firstWrites.left--
        await other!.append('message', { text: 'another instance wrote first' })
      }
      return lite().query(text, params)
    },
    exec: (sql) => lite().exec(sql),
  }
  const web = await startWebChat({ db, listen: pgliteListen(lite()), instance: 'x', chunkDelayMs: 0 })
  closers.push(() => web.close())
  const store = createPostgresPlanStore({ db: lite(), listen: pgliteListen(lite()), prefix: 'web_' })
  await store.migrate()
  closers.push(() => store.close())
  other = await store.openSession(chat)
  // One browser: the page's Origin and the owner cookie its first request gets (R103, R104).
  const browser = webClient(web.url)
  const post = async (path: string, body: unknown) => {
    const response = await browser.post(path, body)
    return [response.status, await response.json()] as const
  }
  const state = async () => (await (await browser.get(`/api/chats/${chat}/state`)).json()) as { mode: unknown; review: { reviewId: string } | null }
  // The browser's first POST on the chat makes it theirs (R103: a GET creates nothing): a review
  // answer naming no open review, which writes nothing in the log.
  expect((await post(`/api/chats/${chat}/review`, { reviewId: 'none', decision: 'Leave plan mode' }))[0]).toBe(409)
  return { store, other, firstWrites, post, state }
}

it('R84: a /plan refused five times because another instance appended first is decided again on the new state and applied; the user never sees the seq error', async () => {
  const { firstWrites, post, state } = await contended('toggled')
  expect((await state()).mode).toEqual({ active: false })
  Object.assign(firstWrites, { type: 'plan/mode', left: 5 })
  expect(await post('/api/chats/toggled/command', { input: '' })).toEqual([200, { kind: 'success', text: 'Plan mode on. Use /plan off to leave.' }])
  expect(firstWrites.left).toBe(0) // refused five times
  expect((await state()).mode).toEqual({ active: true })
  const { rows } = await lite().query<{ type: string }>("SELECT type FROM web_events WHERE session = 'toggled' AND type LIKE 'plan/%' ORDER BY seq")
  expect(rows.map((row) => row.type)).toEqual(['plan/mode'])
})

it('R84, R80: a review answer refused five times because another instance appended first is answered again and recorded once; the user never sees the seq error', async () => {
  const { store, other, firstWrites, post, state } = await contended('answered')
  // The review is opened by the other instance (a durable review, R79); the demo answers it.
  const planMode = createPlanMode({ section: SECTION, review: 'durable', pendingStore: store.pendingStore, logger: { warn: () => {} } })
  closers.push(() => planMode.dispose())
  const agent: PlanAgent = { id: 'answered', session: other }
  expect(await planMode.set(agent, true)).toBe('committed')
  const { reviewId } = (await planMode.exitTool.execute({ plan: PLAN }, { agent })) as { reviewId: string }
  await vi.waitFor(async () => expect((await state()).review).toMatchObject({ reviewId }), { timeout: 60_000, interval: 10 }) // a hang guard, as the config's poll cap
  Object.assign(firstWrites, { type: 'plan/review', left: 5 })
  expect(await post('/api/chats/answered/review', { reviewId, decision: 'Leave plan mode' })).toEqual([200, { outcome: 'left', text: REVIEW_MESSAGES.left }])
  expect(firstWrites.left).toBe(0) // refused five times
  const { rows } = await lite().query<{ data: { outcome: string } }>("SELECT data FROM web_events WHERE session = 'answered' AND type = 'plan/review' ORDER BY seq")
  expect(rows.map((row) => row.data.outcome)).toEqual(['requested', 'left'])
})

it('R83: a /plan whose text holds U+0000 is logged exactly and applied; the demo does not answer 500', async () => {
  const { post, state } = await contended('nul')
  const input = 'add a cache\u0000 for the users'
  const [status, body] = await post('/api/chats/nul/command', { input })
  expect([status, (body as { kind: string }).kind, (body as { steered?: string }).steered]).toEqual([200, 'success', input])
  expect((await state()).mode).toEqual({ active: true })
  const { rows } = await lite().query<{ data: unknown; data_json: unknown }>("SELECT data, data_json FROM web_events WHERE session = 'nul' AND type = 'command/run'")
  expect(rows.map((row) => row.data_json ?? row.data)).toEqual([{ commandId: expect.any(String), name: 'plan', args: input }])
})
