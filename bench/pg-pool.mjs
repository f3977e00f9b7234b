/**
 * A `pg.Pool` as the README makes it (`query_timeout`), handed to the code under test as it is, that
 * counts what it sends without standing between it and its caller: every statement any of its
 * connections runs (the pool's `query` and a checked-out client's alike: `BEGIN`, `COMMIT` and a
 * named statement's execution are one each) and the bytes its sockets wrote (the statements' text,
 * parameters and protocol framing: what the step sent the server). A wrapper object in the pool's
 * place would hide from the store that `db` is a `pg.Pool` (R126).
 */
import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import pg from 'pg'

/**
 * @param {pg.PoolConfig} config
 * @param {number} max
 * @returns {{ pool: pg.Pool, statements(): number, bytes(): number, settled(): Promise<void> }}
 */
export function countedPool(config, max) {
  const pool = new pg.Pool({ query_timeout: 10_000, connectionTimeoutMillis: 5_000, ...config, max })
  pool.on('error', () => {}) // an idle client cut off when the cluster stops at the end
  const clients = new Set()
  let statements = 0
  const idle = []
  /** No connection is checked out and no caller waits for one: nothing is on its way. */
  const quiet = () => pool.totalCount === pool.idleCount && pool.waitingCount === 0
  // A released connection is back among the idle ones once `release` has returned.
  pool.on('release', () =>
    queueMicrotask(() => {
      if (quiet()) for (const resolve of idle.splice(0)) resolve()
    }),
  )
  pool.on('connect', (client) => {
    clients.add(client)
    const query = client.query
    client.query = function counted(...args) {
      statements++
      return query.apply(this, args)
    }
  })
  return {
    pool,
    statements: () => statements,
    bytes: () => {
      let sum = 0
      for (const client of clients) sum += client.connection?.stream?.bytesWritten ?? 0
      return sum
    },
    /** Resolves once no statement is on its way. */
    settled: () => (quiet() ? Promise.resolve() : new Promise((resolve) => idle.push(resolve))),
  }
}

/**
 * Starts a bench instance script (bench/pg-instance.mjs, bench/pg-phases-instance.mjs) in a Node
 * process of its own, with this process's flags, and pushes onto `ends` how to stop it: `'stop'`,
 * then SIGKILL if it has not exited within 5 s.
 * @param {URL} script
 * @param {string[]} args
 * @param {(() => Promise<void>)[]} ends
 */
export function forkInstance(script, args, ends) {
  const instance = fork(fileURLToPath(script), args, { execArgv: process.execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  ends.push(async () => {
    if (instance.exitCode !== null) return
    const exited = new Promise((resolve) => instance.once('exit', resolve))
    instance.send('stop')
    const timer = setTimeout(() => instance.kill('SIGKILL'), 5000)
    await exited
    clearTimeout(timer)
  })
  return instance
}
