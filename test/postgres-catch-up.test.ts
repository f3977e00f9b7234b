import { afterEach, expect, it } from 'vitest'
import { createPostgresPlanStore, pgliteListen, type PgListen, type PgQueryable, type PostgresPlanStore } from '../src/adapters/postgres.js'
import { usePGlite } from './databases.js'

/**
 * `catchUp()` of a PostgreSQL session (R83): a caller that must decide on the log as the database
 * holds it reads the rows it has not taken, whether or not a NOTIFY reached its instance. The
 * instance here hears no NOTIFY at all (every hint lost, as while its listening connection
 * reconnects); another instance on the same PGlite appends.
 */
const open: { close(): Promise<void> }[] = []
afterEach(async () => {
  for (const thing of open.splice(0).reverse()) await thing.close()
})

const lite = usePGlite()

/** A listening connection that hears nothing. */
const hearsNothing: PgListen = async () => async () => {}

async function instance(db: PgQueryable, listen: PgListen): Promise<PostgresPlanStore> {
  const store = createPostgresPlanStore({ db, listen, prefix: 'catch_up_' })
  await store.migrate()
  open.push(store)
  return store
}

it('R83: catchUp takes the rows another instance appended though no NOTIFY reached this one: once it resolves, the session holds them and its subscribers heard them', async () => {
  const deaf = await (await instance(lite(), hearsNothing)).openSession('heard-by-reading')
  const other = await (await instance(lite(), pgliteListen(lite()))).openSession('heard-by-reading')
  const heard: number[] = []
  deaf.subscribe((event) => heard.push(event.seq))
  await other.append('message', { text: 'one' })
  await other.append('message', { text: 'two' })
  await deaf.catchUp()
  expect({ events: deaf.events.map((event) => [event.seq, event.data]), heard }).toEqual({
    events: [
      [1, { text: 'one' }],
      [2, { text: 'two' }],
    ],
    heard: [1, 2],
  })
})

it('R83: catchUp rejects with plan-mode postgres: session <id> could not read its log: <the driver\'s message> when its read fails; a later catchUp reads the rows', async () => {
  let failReads = false
  const db: PgQueryable = {
    query: (text, params) => (failReads && text.startsWith('SELECT seq') ? Promise.reject(new Error('connection terminated')) : lite().query(text, params)),
    exec: (sql) => lite().exec(sql),
  }
  const deaf = await (await instance(db, hearsNothing)).openSession('read-fails')
  const other = await (await instance(lite(), pgliteListen(lite()))).openSession('read-fails')
  await deaf.catchUp() // the read openSession started has ended
  await other.append('message', { text: 'one' })
  failReads = true
  await expect(deaf.catchUp()).rejects.toThrow(new Error('plan-mode postgres: session read-fails could not read its log: connection terminated'))
  expect(deaf.events).toEqual([])
  failReads = false
  await deaf.catchUp()
  expect(deaf.events.map((event) => event.data)).toEqual([{ text: 'one' }])
})
