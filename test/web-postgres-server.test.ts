import { expect, it } from 'vitest'
import { startWebChat, type WebChat } from '../apps/web/server.js'
import { useTestPostgres } from './databases.js'

/**
 * The web demo's start on a real PostgreSQL server (a throwaway cluster on 127.0.0.1, started and
 * stopped here), where an instance starts while others serve: what its start locks, they wait for.
 */
const { closers, pool, listen, client } = useTestPostgres()

/** An instance of the web chat on the server, with a pool and a listening connection of its own; closed after the file. */
async function instance(name: string): Promise<WebChat> {
  const web = await startWebChat({ db: pool({ max: 4 }), listen: listen(), instance: name, chunkDelayMs: 0 })
  closers.push(() => web.close())
  return web
}

it('R106: an instance starts while another instance\'s transaction reads the chats\' tables: its start waits for no lock on them (it alters a table only when it lacks what the demo needs)', async () => {
  await instance('first') // makes the tables as the demo needs them
  const serving = await client()
  // Another instance serving a request, in a transaction that has read both tables.
  await serving.query('BEGIN')
  await serving.query('SELECT count(*) FROM web_chats')
  await serving.query('SELECT count(*) FROM web_contexts')
  const watcher = pool({ max: 4 })
  let watching = true
  /** Resolves once a statement waits for a lock on one of the demo's tables (it would hold every request after it too). */
  const waitsForLock = async (): Promise<string> => {
    while (watching) {
      const { rows } = await watcher.query<{ relation: string }>(
        "SELECT relation::regclass::text AS relation FROM pg_locks WHERE NOT granted AND relation IN ('web_chats'::regclass, 'web_contexts'::regclass)",
      )
      if (rows.length > 0) return `the start waited for a lock on ${rows[0]!.relation}`
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    return 'no longer watched'
  }
  const starting = instance('second').then(() => 'started')
  try {
    expect(await Promise.race([starting, waitsForLock()])).toBe('started')
  } finally {
    watching = false
    await serving.query('COMMIT')
    await starting.catch(() => {})
  }
})

it('R106: an instance started on the tables of an older version (jsonb, no owner or turn columns) changes them once to what the demo needs', async () => {
  const admin = await client()
  await admin.query('CREATE DATABASE older')
  const older = pool({ database: 'older', max: 4 })
  await older.query('CREATE TABLE web_chats (id text PRIMARY KEY, messages jsonb NOT NULL)')
  await older.query('CREATE TABLE web_contexts (id text PRIMARY KEY, context jsonb NOT NULL)')
  const web = await startWebChat({ db: older, listen: listen({ database: 'older' }), instance: 'upgraded', chunkDelayMs: 0 })
  closers.push(() => web.close())
  const { rows } = await older.query<{ table_name: string; column_name: string; data_type: string }>(
    "SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_name IN ('web_chats', 'web_contexts') ORDER BY table_name, ordinal_position",
  )
  expect(rows.map((row) => `${row.table_name}.${row.column_name} ${row.data_type}`)).toEqual([
    'web_chats.id text',
    'web_chats.messages json',
    'web_chats.owner text',
    'web_chats.turn text',
    'web_chats.turn_until timestamp with time zone',
    'web_contexts.id text',
    'web_contexts.context json',
  ])
})
