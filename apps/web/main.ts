/**
 * `npm run web`: the web chat on 127.0.0.1, on PGlite (PostgreSQL in this process) with the
 * offline model, unless told otherwise:
 * - `DATABASE_URL=postgres://…`: the log on that server, shared with every other instance;
 * - `OPENAI_API_KEY`, `ANTHROPIC_API_KEY` or `AI_GATEWAY_API_KEY`: that provider's model, as
 *   `plan-mode chat` chooses it;
 * - `PORT` (default 5173 for `npm run web`, 0 = a free one), `WEB_INSTANCE` (the name in
 *   responses), `WEB_CHUNK_DELAY_MS` and `WEB_REPLY_DELAY_MS` (the offline model's pace: between
 *   streamed chunks, and before each reply);
 * - `PLAN_MODE_APPROVAL_SECRET` (at least 32 characters): the deployment's secret that signs
 *   approvals (R105); without it the first instance on the database generates one and keeps it
 *   there, for every instance on the database;
 * - `WEB_MODEL_GATE` (for tests): a URL the offline model asks before each reply
 *   (`GET <url>?instance=<WEB_INSTANCE>`), starting the reply when the answer has come: a test
 *   holds an answer in flight on an event of its own instead of slowing the model for all.
 * Prints `web chat: <url>` once it serves, and stops on SIGINT/SIGTERM.
 */
import { wrapLanguageModel } from 'ai'
import pg from 'pg'
import { pgListen, pgliteListen, type PgListen, type PgQueryable } from 'xstate-plan-mode/postgres'
import { chooseChatModel } from '../shared/chat-model.js'
import { offlineChatModel } from '../shared/offline-model.js'
import { startPGlite } from '../shared/pglite-cache.js'
import { SECTION, startWebChat } from './server.js'

const env = process.env
const choice = await chooseChatModel({}, env)
const instance = env.WEB_INSTANCE ?? 'web'
const chunkDelayMs = env.WEB_CHUNK_DELAY_MS ? Number(env.WEB_CHUNK_DELAY_MS) : undefined
const replyDelayMs = env.WEB_REPLY_DELAY_MS ? Number(env.WEB_REPLY_DELAY_MS) : undefined

/** The offline model behind `WEB_MODEL_GATE`: each reply starts once the gate has answered. */
function gatedOfflineModel(gate: string) {
  const passGate = async () => {
    const url = new URL(gate)
    url.searchParams.set('instance', instance)
    const answer = await fetch(url)
    if (!answer.ok) throw new Error(`WEB_MODEL_GATE answered ${answer.status}`)
  }
  return wrapLanguageModel({
    model: offlineChatModel({ section: SECTION, chunkDelayMs: chunkDelayMs ?? 40, replyDelayMs: replyDelayMs ?? chunkDelayMs ?? 40 }),
    middleware: {
      specificationVersion: 'v3',
      wrapGenerate: async ({ doGenerate }) => (await passGate(), doGenerate()),
      wrapStream: async ({ doStream }) => (await passGate(), doStream()),
    },
  })
}
let db: PgQueryable
let listen: PgListen
let endDb: () => Promise<void>
if (env.DATABASE_URL) {
  const config = { connectionString: env.DATABASE_URL }
  const pool = new pg.Pool({ ...config, query_timeout: 10_000, connectionTimeoutMillis: 5_000 })
  pool.on('error', () => {}) // a lost idle connection: the next query reports it
  db = pool
  listen = pgListen(async () => {
    const client = new pg.Client(config)
    await client.connect()
    return client
  })
  endDb = () => pool.end()
} else {
  // A fresh database each start, loaded from a cached initialised data directory (apps/shared/pglite-cache.ts).
  const lite = await startPGlite()
  db = lite
  listen = pgliteListen(lite)
  endDb = () => lite.close()
}

const chat = await startWebChat({
  db,
  listen,
  instance,
  ...(choice.provider !== 'offline' ? { model: choice.model } : env.WEB_MODEL_GATE ? { model: gatedOfflineModel(env.WEB_MODEL_GATE) } : {}),
  ...(chunkDelayMs !== undefined ? { chunkDelayMs } : {}),
  ...(replyDelayMs !== undefined ? { replyDelayMs } : {}),
  port: Number(env.PORT ?? 5173),
  ...(env.PLAN_MODE_APPROVAL_SECRET ? { approvalSecret: env.PLAN_MODE_APPROVAL_SECRET } : {}),
})
const database = env.DATABASE_URL ? 'PostgreSQL (DATABASE_URL)' : 'PGlite, in memory'
console.log(`web chat: ${chat.url}  (model: ${choice.label}; log: ${database})`)

let stopping = false
const stop = async () => {
  if (stopping) return
  stopping = true
  await chat.close().catch(() => {})
  await endDb().catch(() => {})
  process.exit(0)
}
process.on('SIGINT', stop)
process.on('SIGTERM', stop)
