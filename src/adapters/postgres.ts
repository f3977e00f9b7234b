/**
 * `xstate-plan-mode/postgres`: the session log, the pending store and the checkpoint store on
 * PostgreSQL (docs/spec.md R83–R85), through `pg` (node-postgres) on a server or PGlite
 * (PostgreSQL compiled to WebAssembly, in-process) as the embedded default. Neither is imported
 * here: the host hands over a connection (`pg.Pool`, a `PGlite`), so both stay optional peers.
 *
 * Several instances share one database. The database keeps the seq contract: events are keyed by
 * (session, seq), and an append inserts the seq after the last event its instance has seen, so an
 * instance whose view is stale loses the insert and is told so (R84): a decision is never written
 * on a state another instance has already changed. Appends are announced with NOTIFY; every
 * instance LISTENs and reads the rows it has not seen, in order.
 */
import { readCheckpoint, type CheckpointStore, type PlanCheckpoint } from '../log/checkpoint.js'
import { PLAN_MODE_EVENT, PLAN_REVIEW_EVENT } from '../log/kinds.js'
import type { PendingStore, SessionEvent, SessionLog } from '../types.js'

/** What the adapter needs of a connection: `pg.Pool`, `pg.Client` and `PGlite` all have it. */
export interface PgQueryable {
  query(text: string, params?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>
  /** Runs several statements in one round trip (PGlite's `exec`); without it, `query(sql)` does (pg). */
  exec?(sql: string): Promise<unknown>
}

/**
 * LISTENs on `channel`: calls `onNotify(payload)` for every NOTIFY, and `onReconnect()` after the
 * listening connection was lost and made again (notifications in between are lost: the store
 * then reads what it missed). Resolves with a function that stops listening.
 */
export type PgListen = (channel: string, onNotify: (payload: string) => void, onReconnect: () => void) => Promise<() => Promise<void>>

/** Options of `createPostgresPlanStore`. */
export interface PostgresPlanStoreOptions {
  /** The connection every query goes through (a `pg.Pool` for a server, a `PGlite`). */
  db: PgQueryable
  /** How NOTIFY reaches this instance: `pgListen(config)` for a server, `pgliteListen(db)` for PGlite. */
  listen: PgListen
  /** The prefix of the tables and of the NOTIFY channel (default `plan_mode_`): lower case letters, digits, `_`. */
  prefix?: string
}

/** A session log on PostgreSQL: a `SessionLog` that also stops listening (`close`). */
export interface PostgresSessionLog extends SessionLog {
  /** The session's id (its rows' key). */
  readonly sessionId: string
  /** Resolves once the row is committed (R83); rejects when it is not written (R84). */
  append(type: string, data: unknown): Promise<SessionEvent>
  /** Stops following other instances' appends; the log takes no more appends. */
  close(): Promise<void>
}

/** The PostgreSQL plan-mode store of one instance: its sessions, pending store and checkpoint store. */
export interface PostgresPlanStore {
  /** Creates the tables when they are missing (safe to call from every instance at once). */
  migrate(): Promise<void>
  /**
   * Loads a session: its latest checkpoint and only the events after it (R76), or the whole log
   * when the checkpoint cannot be used; its pending selection for `pendingStore.get`. Then follows
   * the appends of every instance.
   */
  openSession(sessionId: string): Promise<PostgresSessionLog>
  /** P kept in the database (R64): `get` answers what `openSession` loaded. Agent id = session id. */
  readonly pendingStore: PendingStore
  /** Checkpoints kept in the database (R76); a save never replaces a newer one. */
  readonly checkpoints: CheckpointStore
  /** Closes every open session and stops listening; the connection is the host's to end. */
  close(): Promise<void>
}

const PREFIX = /^[a-z_][a-z0-9_]{0,40}$/

/** The events that record a decision made on the log's state: conditional on the instance's view (R84). */
const DECISIONS: ReadonlySet<string> = new Set([PLAN_MODE_EVENT, PLAN_REVIEW_EVENT])

/** How often an event that decides nothing is tried at the next free seq before its append fails. */
const MAX_ATTEMPTS = 20

/** PostgreSQL's code for a unique violation: another instance has taken the seq. */
const UNIQUE_VIOLATION = '23505'

/** The message of an append another instance got in first (R84). */
export function seqTakenMessage(sessionId: string, seq: number, type: string): string {
  return `plan-mode postgres: session ${sessionId} already has seq ${seq} (another instance appended first); the ${type} event was not written`
}

/**
 * Whether an error (or a message, such as the text of a failed `/plan`) is R84's refusal of a
 * decision made on a stale view: the host may repeat the operation, which decides again on the
 * rows the instance has read meanwhile.
 */
export function isSeqTaken(error: unknown): boolean {
  const text = typeof error === 'string' ? error : error instanceof Error ? error.message : ''
  return SEQ_TAKEN.test(text)
}

const SEQ_TAKEN = /plan-mode postgres: session .* already has seq \d+ \(another instance appended first\); the .+ event was not written/

/** Creates the store of one instance on a database (call `migrate()` once before the first session). */
export function createPostgresPlanStore(options: PostgresPlanStoreOptions): PostgresPlanStore {
  const { db, listen } = options
  const prefix = options.prefix ?? 'plan_mode_'
  if (!PREFIX.test(prefix)) throw new TypeError(`plan-mode postgres: the prefix must match ${PREFIX}; got ${JSON.stringify(prefix)}`)
  const events = `${prefix}events`
  const pendingTable = `${prefix}pending`
  const checkpointTable = `${prefix}checkpoints`
  const channel = `${prefix}events`

  const sessions = new Map<string, Set<Session>>()
  const pending = new Map<string, boolean>()
  let stopListening: Promise<() => Promise<void>> | undefined
  let closed = false

  /**
   * Listening starts with the first session; one LISTEN serves every session of the instance. A
   * LISTEN that failed (the server was down) is forgotten, so the next `openSession` tries again.
   */
  function ensureListening(): Promise<unknown> {
    if (stopListening !== undefined) return stopListening
    const started = listen(
      channel,
      (payload) => {
        const note = readNotice(payload)
        if (note === undefined) return
        for (const session of sessions.get(note.session) ?? []) session.heard(note)
      },
      () => {
        for (const set of sessions.values()) for (const session of set) session.catchUp()
      },
    )
    stopListening = started
    started.catch(() => {
      if (stopListening === started) stopListening = undefined
    })
    return started
  }

  class Session implements PostgresSessionLog {
    readonly events: SessionEvent[]
    readonly checkpoint: unknown
    readonly #listeners = new Set<(event: SessionEvent) => void>()
    /** The seq of the last event taken (the checkpoint's before any). */
    #last: number
    /** Appends and catch-ups take turns: each sees the events the one before it took. */
    #chain: Promise<unknown> = Promise.resolve()
    /** This instance's appends not run yet: the seq of the next one comes after theirs. */
    #appending = 0
    /** The seqs this instance is writing now: their NOTIFY is its own, and their answer takes them. */
    readonly #writing = new Set<number>()
    #closed = false

    constructor(
      readonly sessionId: string,
      loaded: SessionEvent[],
      checkpoint: PlanCheckpoint | undefined,
    ) {
      this.events = loaded
      this.checkpoint = checkpoint
      this.#last = loaded.at(-1)?.seq ?? checkpoint?.seq ?? 0
    }

    subscribe(listener: (event: SessionEvent) => void): () => void {
      this.#listeners.add(listener)
      return () => void this.#listeners.delete(listener)
    }

    append(type: string, data: unknown): Promise<SessionEvent> {
      // A decision (plan/mode, plan/review) is made on the log as it stands when it is called
      // (with this instance's own appends still on their way): its seq is fixed now, and an event
      // taken before it runs makes it stale (R84). Any other event decides nothing: it goes after
      // whatever is in the log when its turn comes.
      const decides = DECISIONS.has(type)
      const fixed = this.#last + 1 + this.#appending++
      const run = async (): Promise<SessionEvent> => {
        this.#appending--
        const json = JSON.stringify(data ?? null)
        for (let attempt = 1; ; attempt++) {
          if (this.#closed) throw new Error(`plan-mode postgres: session ${this.sessionId} is closed; the ${type} event was not written`)
          const seq = decides ? fixed : this.#last + 1
          if (this.#last >= seq) throw new Error(seqTakenMessage(this.sessionId, seq, type))
          if (this.#last + 1 < seq) throw new Error(`plan-mode postgres: an earlier append of session ${this.sessionId} failed; the ${type} event decided after it was not written`)
          this.#writing.add(seq)
          try {
            // One statement: the insert and its NOTIFY commit together, or neither does.
            await db.query(
              `WITH ins AS (INSERT INTO ${events} (session, seq, type, data) VALUES ($1, $2, $3, $4::jsonb) RETURNING seq)
               SELECT pg_notify($5, $6) FROM ins`,
              [this.sessionId, seq, type, json, channel, noticeOf(this.sessionId, seq, type, json)],
            )
          } catch (error) {
            if ((error as { code?: unknown } | null)?.code === UNIQUE_VIOLATION) {
              await this.#read() // the rows it missed, so the next decision is made on them
              if (!decides && attempt < MAX_ATTEMPTS) continue
              throw new Error(seqTakenMessage(this.sessionId, seq, type))
            }
            throw new Error(`plan-mode postgres: the ${type} event of session ${this.sessionId} may not have been written: ${messageOf(error)}`, { cause: error })
          } finally {
            this.#writing.delete(seq)
          }
          // A notification may have read the row already; else it is taken here, in order.
          if (this.#last < seq) this.#take([{ seq, type, data: JSON.parse(json) as unknown }])
          for (let i = this.events.length - 1; i >= 0 && this.events[i]!.seq >= seq; i--) if (this.events[i]!.seq === seq) return this.events[i]!
          return { seq, type, data }
        }
      }
      const appended = this.#chain.then(run, run)
      this.#chain = appended.catch(() => {})
      return appended
    }

    /**
     * A NOTIFY: the next event, carried whole, is taken at once; a later one (or one too large to
     * carry) makes the instance read the rows it has not taken. Its own appends take their rows.
     */
    heard(note: Notice): void {
      if (note.seq <= this.#last || this.#writing.has(note.seq)) return
      if (note.event !== undefined && note.seq === this.#last + 1) return this.#take([note.event])
      this.catchUp()
    }

    /** Reads every row after the last one taken (after a dropped listening connection, too). */
    catchUp(): void {
      const read = () => this.#read().catch(() => {}) // a failed read is retried by the next notification
      this.#chain = this.#chain.then(read, read)
    }

    async #read(): Promise<void> {
      if (this.#closed) return
      const { rows } = await db.query(`SELECT seq, type, data FROM ${events} WHERE session = $1 AND seq > $2 ORDER BY seq`, [
        this.sessionId,
        this.#last,
      ])
      this.#take(rows.map(rowEvent))
    }

    /** Takes events in seq order, each once, and tells the listeners; stops at a gap (R74). */
    #take(rows: SessionEvent[]): void {
      for (const event of rows) {
        if (event.seq <= this.#last) continue
        if (event.seq !== this.#last + 1) break
        this.#last = event.seq
        this.events.push(event)
        for (const listener of [...this.#listeners]) {
          try {
            listener(event)
          } catch {
            // A listener's failure is its own; the log goes on.
          }
        }
      }
    }

    async close(): Promise<void> {
      this.#closed = true
      this.#listeners.clear()
      const set = sessions.get(this.sessionId)
      set?.delete(this)
      if (set?.size === 0) sessions.delete(this.sessionId)
      await this.#chain
    }
  }

  return {
    async migrate() {
      const sql = `
        SELECT pg_advisory_xact_lock(hashtext('${prefix}migrate'));
        CREATE TABLE IF NOT EXISTS ${events} (
          session text NOT NULL, seq bigint NOT NULL, type text NOT NULL, data jsonb,
          PRIMARY KEY (session, seq));
        CREATE TABLE IF NOT EXISTS ${pendingTable} (session text PRIMARY KEY, pending boolean NOT NULL);
        CREATE TABLE IF NOT EXISTS ${checkpointTable} (session text PRIMARY KEY, seq bigint NOT NULL, checkpoint jsonb NOT NULL);`
      // One round trip, one implicit transaction: the lock keeps concurrent migrations apart.
      await (db.exec ? db.exec(`BEGIN;${sql}COMMIT;`) : db.query(`BEGIN;${sql}COMMIT;`))
    },

    async openSession(sessionId) {
      if (closed) throw new Error('plan-mode postgres: the store is closed')
      checkSessionId(sessionId)
      const notOpened = (why: string) => new Error(`plan-mode postgres: session ${sessionId} was not opened: ${why}`)
      let checkpoint: PlanCheckpoint | undefined
      let loaded: SessionEvent[]
      try {
        await ensureListening()
        const saved = await db.query(`SELECT checkpoint FROM ${checkpointTable} WHERE session = $1`, [sessionId])
        const read = saved.rows.length === 0 ? undefined : readCheckpoint(saved.rows[0]!.checkpoint)
        // A checkpoint attach cannot use is not handed over: the whole log is loaded (R76).
        checkpoint = read === undefined || 'problem' in read ? undefined : read
        const { rows } = await db.query(`SELECT seq, type, data FROM ${events} WHERE session = $1 AND seq > $2 ORDER BY seq`, [
          sessionId,
          checkpoint?.seq ?? 0,
        ])
        loaded = rows.map(rowEvent)
        const kept = await db.query(`SELECT pending FROM ${pendingTable} WHERE session = $1`, [sessionId])
        const value = kept.rows[0]?.pending
        if (typeof value === 'boolean') pending.set(sessionId, value)
        else pending.delete(sessionId)
      } catch (error) {
        throw notOpened(messageOf(error))
      }
      // The log is folded whole or not at all: a hole would make every instance's fold wrong (R74).
      const missing = firstMissingSeq(loaded, checkpoint?.seq ?? 0)
      if (missing !== undefined) throw notOpened(`its log has no event at seq ${missing.seq} (the next row has seq ${missing.next})`)
      const session = new Session(sessionId, loaded, checkpoint)
      let set = sessions.get(sessionId)
      if (set === undefined) sessions.set(sessionId, (set = new Set()))
      set.add(session)
      // Appends that landed between the load and the LISTEN taking effect.
      session.catchUp()
      return session
    },

    pendingStore: {
      get: (agentId) => pending.get(agentId),
      async set(agentId, value) {
        pending.set(agentId, value)
        await db.query(
          `INSERT INTO ${pendingTable} (session, pending) VALUES ($1, $2) ON CONFLICT (session) DO UPDATE SET pending = excluded.pending`,
          [agentId, value],
        )
      },
      async delete(agentId) {
        pending.delete(agentId)
        await db.query(`DELETE FROM ${pendingTable} WHERE session = $1`, [agentId])
      },
    },

    checkpoints: {
      async load(agentId) {
        const { rows } = await db.query(`SELECT checkpoint FROM ${checkpointTable} WHERE session = $1`, [agentId])
        return rows[0]?.checkpoint
      },
      async save(agentId, checkpoint) {
        // Two instances may save at once: the newer checkpoint stays.
        await db.query(
          `INSERT INTO ${checkpointTable} (session, seq, checkpoint) VALUES ($1, $2, $3::jsonb)
           ON CONFLICT (session) DO UPDATE SET seq = excluded.seq, checkpoint = excluded.checkpoint
           WHERE ${checkpointTable}.seq < excluded.seq`,
          [agentId, checkpoint.seq, JSON.stringify(checkpoint)],
        )
      },
    },

    async close() {
      closed = true
      await Promise.all([...sessions.values()].flatMap((set) => [...set].map((session) => session.close())))
      const stop = await stopListening?.catch(() => undefined)
      await stop?.()
    },
  }
}

/** What a NOTIFY says: the session and seq, and the event itself when it fits the payload. */
interface Notice {
  session: string
  seq: number
  event?: SessionEvent
}

/** PostgreSQL's payload limit is 8000 bytes: a larger event is announced without its data. */
const MAX_NOTICE = 7900

/** The NOTIFY payload of an append: `[session, seq, type, data]`, or `[session, seq]` for a large event. */
function noticeOf(session: string, seq: number, type: string, json: string): string {
  const whole = `[${JSON.stringify(session)},${seq},${JSON.stringify(type)},${json}]`
  return new TextEncoder().encode(whole).length <= MAX_NOTICE ? whole : JSON.stringify([session, seq])
}

/** Reads a NOTIFY payload; anything else on the channel is ignored. */
function readNotice(payload: string): Notice | undefined {
  try {
    const [session, seq, type, data] = JSON.parse(payload) as [unknown, unknown, unknown, unknown]
    if (typeof session !== 'string' || typeof seq !== 'number' || !Number.isSafeInteger(seq)) return undefined
    return typeof type === 'string' ? { session, seq, event: { seq, type, data } } : { session, seq }
  } catch {
    return undefined
  }
}

/**
 * The longest session id, in UTF-8 bytes. A session id is a key of three btree indexes (an index
 * row holds at most about 2700 bytes) and is carried by every NOTIFY (at most 8000 bytes): as JSON
 * a byte may take 6 (`\u001f`), so 1024 bytes keep the payload under 6200.
 */
export const MAX_SESSION_ID_BYTES = 1024

/** Refuses a session id the tables cannot key: empty, too long, or holding U+0000 (text cannot). */
function checkSessionId(sessionId: unknown): asserts sessionId is string {
  if (typeof sessionId !== 'string' || sessionId === '') throw new TypeError('plan-mode postgres: a session id must be a non-empty string')
  const bytes = new TextEncoder().encode(sessionId).length
  if (bytes > MAX_SESSION_ID_BYTES) throw new TypeError(`plan-mode postgres: a session id must be at most ${MAX_SESSION_ID_BYTES} bytes in UTF-8; got ${bytes}`)
  if (sessionId.includes('\u0000')) throw new TypeError('plan-mode postgres: a session id must not contain U+0000')
}

/** The first seq missing from loaded rows that must follow `after` one by one, and the seq of the row found instead. */
function firstMissingSeq(rows: readonly SessionEvent[], after: number): { seq: number; next: number } | undefined {
  let expected = after + 1
  for (const row of rows) {
    if (row.seq !== expected) return { seq: expected, next: row.seq }
    expected++
  }
  return undefined
}

/** A row as a log event (pg answers bigint as a string). */
function rowEvent(row: Record<string, unknown>): SessionEvent {
  return { seq: Number(row.seq), type: String(row.type), data: row.data }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** `listen` for PGlite: its own `listen`, which never drops. */
export function pgliteListen(db: { listen(channel: string, callback: (payload: string) => void): Promise<() => Promise<void>> }): PgListen {
  return (channel, onNotify) => db.listen(channel, onNotify)
}

/**
 * `listen` for a PostgreSQL server through `pg`: a dedicated connection (LISTEN holds one), made
 * again after it is lost, with `onReconnect` so the store reads what it missed.
 * @param connect makes and connects a new `pg.Client` (e.g. `async () => { const c = new pg.Client(config); await c.connect(); return c }`)
 */
export function pgListen(connect: () => Promise<PgListenClient>, { retryMs = 200 }: { retryMs?: number } = {}): PgListen {
  return async (channel, onNotify, onReconnect) => {
    let client: PgListenClient | undefined
    let stopped = false
    let timer: ReturnType<typeof setTimeout> | undefined
    const open = async (): Promise<void> => {
      const next = await connect()
      next.on('notification', (message) => {
        if (message.channel === channel && typeof message.payload === 'string') onNotify(message.payload)
      })
      next.on('error', () => {}) // 'end' follows; reconnecting is its business
      next.on('end', () => {
        if (stopped || client !== next) return
        client = undefined
        const retry = () => {
          timer = undefined
          if (stopped) return
          open().then(onReconnect, () => (timer = setTimeout(retry, retryMs)))
        }
        timer = setTimeout(retry, retryMs)
      })
      try {
        await next.query(`LISTEN "${channel}"`)
      } catch (error) {
        await next.end().catch(() => {}) // connected but not listening: not kept open
        throw error
      }
      client = next
    }
    await open()
    return async () => {
      stopped = true
      if (timer !== undefined) clearTimeout(timer)
      await client?.end().catch(() => {})
    }
  }
}

/** What `pgListen` needs of a `pg.Client`. */
export interface PgListenClient {
  query(text: string): Promise<unknown>
  on(event: 'notification', listener: (message: { channel: string; payload?: string }) => void): unknown
  on(event: 'error' | 'end', listener: (...args: unknown[]) => void): unknown
  end(): Promise<void>
}
