import type { PGlite } from '@electric-sql/pglite'
import pg from 'pg'
import { afterAll, beforeAll } from 'vitest'
import { pgListen, type PgListen } from '../src/adapters/postgres.js'
import { startTestPostgres, type TestPostgres } from '../apps/shared/local-postgres.js'
import { startPGlite } from '../apps/shared/pglite-cache.js'

/**
 * The database of a test file, made before its tests and closed after them: one PGlite, or a
 * throwaway PostgreSQL server (apps/shared/local-postgres.ts). Kept out of test/helpers.ts, which the
 * files without a database import.
 */

/**
 * One PGlite for the file, loaded from a cached initialised data directory (apps/shared/pglite-cache.ts:
 * initdb runs once per machine, not per file): the returned function gives it, in a test or a hook.
 */
export function usePGlite(): () => PGlite {
  let lite: PGlite | undefined
  beforeAll(async () => {
    lite = await startPGlite()
  })
  afterAll(() => lite?.close())
  return () => {
    if (!lite) throw new Error('usePGlite: the PGlite is made before the file\'s tests; read it in a test or a hook')
    return lite
  }
}

/** A throwaway PostgreSQL server for the file, and what the file opens on it. */
export interface FilePostgres {
  /** The server, read in a test or a hook (it starts before the file's tests). */
  readonly server: TestPostgres
  /** Run after the file's tests, last first, before the server is destroyed; one that fails does not stop the others. */
  readonly closers: (() => Promise<unknown>)[]
  /**
   * A pool on the server's `postgres` database (`options` override the config), ended after the
   * file. An idle client lost with the server is not an error: the next query reports it.
   */
  pool(options?: pg.PoolConfig): pg.Pool
  /** `pgListen` on new clients of the server (`config` overrides the server's). */
  listen(config?: pg.ClientConfig, options?: { retryMs?: number }): PgListen
  /** A connected client of the server (`config` overrides the server's), ended after the file. */
  client(config?: pg.ClientConfig): Promise<pg.Client>
}

export function useTestPostgres(): FilePostgres {
  let started: TestPostgres | undefined
  const closers: (() => Promise<unknown>)[] = []
  beforeAll(async () => {
    started = await startTestPostgres()
  })
  afterAll(async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => {})
    await started?.destroy()
  })
  const current = (): TestPostgres => {
    if (!started) throw new Error('useTestPostgres: the server starts before the file\'s tests; read it in a test or a hook')
    return started
  }
  const server: TestPostgres = {
    get port() {
      return current().port
    },
    get config() {
      return current().config
    },
    stop: () => current().stop(),
    start: () => current().start(),
    destroy: () => current().destroy(),
  }
  const newClient = (config: pg.ClientConfig) => {
    const client = new pg.Client({ ...server.config, ...config })
    client.on('error', () => {}) // a connection cut by the test or the server: its next query reports it
    return client
  }
  return {
    server,
    closers,
    pool(options = {}) {
      const pool = new pg.Pool({ ...server.config, ...options })
      pool.on('error', () => {})
      closers.push(() => pool.end())
      return pool
    },
    listen(config = {}, options = {}) {
      return pgListen(async () => {
        const client = newClient(config)
        await client.connect()
        return client
      }, options)
    },
    async client(config = {}) {
      const client = newClient(config)
      await client.connect()
      closers.push(() => client.end())
      return client
    },
  }
}
