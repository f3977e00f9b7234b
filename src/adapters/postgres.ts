/**
 * `xstate-plan-mode/postgres`: the session log, the pending store and the checkpoint store on
 * PostgreSQL (docs/spec.md R83–R85), through `pg` (node-postgres) on a server or PGlite
 * (PostgreSQL compiled to WebAssembly, in-process) as the embedded default. Neither is imported
 * here: the host hands over a connection (`pg.Pool`, a `PGlite`), so both stay optional peers.
 *
 * Several instances share one database. The database keeps the seq contract: events are keyed by
 * (session, seq), and every append is one call of the function `<prefix>append`, which takes the
 * session's turn (a lock on the session's row of `<prefix>turns`, first come first served: a role
 * without a privilege on the table cannot take it, as it could an advisory lock), writes the row
 * after the last one the table holds and answers the rows the instance had not taken before it.
 * A decision is written only when nothing was appended since the instance's view (R84); any other
 * event goes after whatever is there. An append carries its deadline in the server's clock, and the
 * function writes nothing past it, so an append its instance reported timed out never lands later.
 * Appends are announced with NOTIFY, but a notification is only a hint to read: anyone who can
 * connect may send one, so an instance takes only rows of the table.
 *
 * @module xstate-plan-mode/postgres
 */
import { checkpointEventProblem, PLAN_CHECKPOINT_VERSION, readCheckpoint, type CheckpointStore, type PlanCheckpoint } from '../log/checkpoint.js'
import { PLAN_MODE_EVENT, PLAN_REVIEW_EVENT } from '../log/kinds.js'
import { isTimeoutMs, MAX_TIMEOUT_MS, waitAtMost } from '../timeouts.js'
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
  /**
   * How long an append may take from its call until it settles, in ms (R83). Default: the pool's
   * `query_timeout` when `db` has one (`pg.Pool`), else no limit (PGlite, in-process).
   */
  appendTimeoutMs?: number
  /**
   * Sends every statement of the store but `migrate` as a named prepared statement (pg's
   * `db.query({ name, text, values })`): the server parses and plans each once per connection
   * instead of once per call. Default: on for a `pg.Pool` or `pg.Client` (a `db` with `connect`
   * and no `exec`), off for anything else (PGlite, a wrapper that takes `(text, params)`). Turn it
   * off behind a pooler that does not keep prepared statements per client (PgBouncer before 1.21
   * in transaction mode).
   */
  namedStatements?: boolean
}

/** A session log on PostgreSQL: a `SessionLog` that also stops listening (`close`). */
export interface PostgresSessionLog extends SessionLog {
  /** The session's id (its rows' key). */
  readonly sessionId: string
  /** Resolves once the row is committed (R83); rejects when it is not written (R84). */
  append(type: string, data: unknown): Promise<SessionEvent>
  /**
   * Reads the rows the table holds after the last one the session has taken, and tells its
   * subscribers of each (R83); resolves once it has. A caller that must decide on the log as the
   * database holds it awaits this first: a NOTIFY is only a hint, and one may be lost (while the
   * listening connection reconnects). Rejects with `plan-mode postgres: session <id> could not
   * read its log: <why>` when that read fails or gets no answer within `appendTimeoutMs`.
   */
  catchUp(): Promise<void>
  /** Stops following other instances' appends; the log takes no more appends. */
  close(): Promise<void>
}

/** The PostgreSQL plan-mode store of one instance: its sessions, pending store and checkpoint store. */
export interface PostgresPlanStore {
  /** Creates the tables when they are missing (safe to call from every instance at once). */
  migrate(): Promise<void>
  /**
   * Loads a session: its latest checkpoint, the event it ends at and the events after it (R76), or
   * the whole log when the checkpoint cannot be used (another session's, or not ending at its
   * event); its pending selection for `pendingStore.get`. Then follows the appends of every instance.
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

/**
 * How often an event that decides nothing is tried again when a writer that does not take the
 * session's turn (not this adapter: a hand-made insert, an old version) took its seq first.
 */
const MAX_ATTEMPTS = 20

/** PostgreSQL's code for a unique violation: another instance has taken the seq. */
const UNIQUE_VIOLATION = '23505'

/** PostgreSQL's codes for a table (or its row type) created meanwhile by another transaction. */
const DUPLICATE_TABLE = '42P07'
const DUPLICATE_OBJECT = '42710'

/** PostgreSQL's code for a lock not granted within `lock_timeout`. */
const LOCK_NOT_AVAILABLE = '55P03'

/** The code `<prefix>append` refuses a write with once the append's deadline has passed (R83). */
const DEADLINE_PASSED = 'PM001'

/** How long `migrate` waits for a lock when the store has no `appendTimeoutMs` (R83). */
const MIGRATE_LOCK_WAIT_MS = 10_000

/** The message of a `migrate` whose lock another transaction held for longer than it waits (R83). */
function migrateLockMessage(ms: number): string {
  return `plan-mode postgres: migrate waited ${ms} ms for a lock another transaction holds (another migrate?); nothing was changed`
}

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
  const names = storeNames(prefix)
  const appendTimeoutMs = options.appendTimeoutMs ?? queryTimeoutOf(db)
  const named = options.namedStatements ?? isPgDriver(db)
  /** The names of the store's statements (a dozen texts), each hashed once. */
  const statementNames = new Map<string, string>()
  /** Runs one of the store's statements: named (parsed and planned once per connection) when the store uses them. */
  const send: Send = (text, params) => {
    if (!named) return query(db, text, params)
    let name = statementNames.get(text)
    if (name === undefined) statementNames.set(text, (name = statementName(text)))
    return query(db, { name, text, values: params })
  }
  if (appendTimeoutMs !== undefined && !(isTimeoutMs(appendTimeoutMs) && appendTimeoutMs > 0)) {
    throw new TypeError(`plan-mode postgres: appendTimeoutMs must be a number of milliseconds from 1 to ${MAX_TIMEOUT_MS}; got ${String(appendTimeoutMs)}`)
  }
  const instance = new StoreInstance(names, send, appendTimeoutMs, listen)
  const { pending } = instance

  return {
    migrate: () => migrateStore(db, names, appendTimeoutMs ?? MIGRATE_LOCK_WAIT_MS),
    openSession: (sessionId) => instance.open(sessionId),
    pendingStore: {
      get: (agentId) => pending.get(agentId),
      set: (agentId, value) => pending.set(agentId, value),
      delete: (agentId) => pending.delete(agentId),
    },
    checkpoints: {
      async load(agentId) {
        const { rows } = await send(`SELECT checkpoint FROM ${names.checkpoints} WHERE session = $1`, [agentId])
        if (!Array.isArray(rows)) throw new Error('plan-mode postgres: the database answered no rows')
        return (rows[0] as Record<string, unknown> | undefined)?.checkpoint
      },
      async save(agentId, checkpoint) {
        // Two instances may save at once: the newer checkpoint stays. One no loader can use (of an
        // older version, of another agent) is replaced no matter its seq, or it would keep every
        // later checkpoint out; one whose event is gone went with it (R76, R85).
        const stored = `${names.checkpoints}.checkpoint`
        await send(
          `INSERT INTO ${names.checkpoints} (session, seq, checkpoint) VALUES ($1, $2, $3::json)
           ON CONFLICT (session) DO UPDATE SET seq = excluded.seq, checkpoint = excluded.checkpoint
           WHERE ${names.checkpoints}.seq < excluded.seq
              OR (${stored} ->> 'version') IS DISTINCT FROM $4
              OR (${stored} ->> 'agentId') IS DISTINCT FROM $1`,
          [agentId, checkpoint.seq, JSON.stringify(checkpoint), PLAN_CHECKPOINT_VERSION],
        )
      },
    },

    close: () => instance.close(),
  }
}

/** The names of one store's tables, append function and NOTIFY channel, made from its prefix. */
interface StoreNames {
  readonly events: string
  readonly pending: string
  readonly checkpoints: string
  /** The key that binds a checkpoint to the event it ends at (R85). */
  readonly checkpointEventKey: string
  /** The sessions' turns: an append takes its session's turn by a lock on the session's row. */
  readonly turns: string
  readonly channel: string
  readonly append: string
}

function storeNames(prefix: string): StoreNames {
  return {
    events: `${prefix}events`,
    pending: `${prefix}pending`,
    checkpoints: `${prefix}checkpoints`,
    checkpointEventKey: `${prefix}checkpoints_event`,
    turns: `${prefix}turns`,
    channel: `${prefix}events`,
    append: `${prefix}append`,
  }
}

/** Runs one of a store's statements. */
type Send = (text: string, params: unknown[]) => Promise<{ rows: unknown }>

/**
 * Creates the store's tables and its append function where they are missing, in one statement
 * batch (tried again when instances starting at once collide), then checks the checkpoints' key
 * in a second; safe to run from every instance at once, waiting at most `lockWaitMs` for a lock.
 */
async function migrateStore(db: PgQueryable, names: StoreNames, lockWaitMs: number): Promise<void> {
  const sql = `
    SELECT set_config('lock_timeout', '${lockWaitMs}ms', true);
    CREATE TABLE IF NOT EXISTS ${names.turns} (session text PRIMARY KEY);
    -- Migrations take turns on a table of the store's own: a role without a privilege on it
    -- cannot hold them up, as it could with an advisory lock. Appends do not wait for this lock.
    LOCK TABLE ${names.turns} IN SHARE UPDATE EXCLUSIVE MODE;
    CREATE TABLE IF NOT EXISTS ${names.events} (
      session text NOT NULL, seq bigint NOT NULL, type text NOT NULL, data jsonb, data_json json,
      PRIMARY KEY (session, seq));
    DO $do$ BEGIN
      -- Tables made before data_json (data jsonb cannot hold U+0000): the column is added, no rewrite.
      IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = '${names.events}'::regclass AND attname = 'data_json' AND NOT attisdropped) THEN
        ALTER TABLE ${names.events} ADD COLUMN data_json json;
      END IF;
    END $do$;
    CREATE TABLE IF NOT EXISTS ${names.pending} (session text PRIMARY KEY, pending boolean NOT NULL);
    -- A checkpoint goes with the event it ends at: a log deleted and made again is never read
    -- through the old log's checkpoint, however alike their events at that seq (R85).
    CREATE TABLE IF NOT EXISTS ${names.checkpoints} (session text PRIMARY KEY, seq bigint NOT NULL, checkpoint json NOT NULL,
      CONSTRAINT ${names.checkpointEventKey} FOREIGN KEY (session, seq) REFERENCES ${names.events} (session, seq) ON DELETE CASCADE);
    DO $do$ BEGIN
      -- A checkpoint holds plans, which may hold U+0000: json keeps its text, jsonb refuses it.
      -- A table made when it was jsonb (one small row per session) is changed once.
      IF (SELECT atttypid FROM pg_attribute WHERE attrelid = '${names.checkpoints}'::regclass AND attname = 'checkpoint' AND NOT attisdropped) = 'jsonb'::regtype THEN
        ALTER TABLE ${names.checkpoints} ALTER COLUMN checkpoint TYPE json USING checkpoint::json;
      END IF;
      -- A table made before checkpoints went with their event: the ones whose event is gone go now.
      -- The key is added NOT VALID: adding one locks the events table against appends until this
      -- transaction ends, and a check of the old rows here would hold that lock while it scans.
      -- They are checked after the commit (VALIDATE), under a lock appends do not wait for.
      IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = '${names.checkpoints}'::regclass AND conname = '${names.checkpointEventKey}') THEN
        DELETE FROM ${names.checkpoints} c WHERE NOT EXISTS (SELECT 1 FROM ${names.events} e WHERE e.session = c.session AND e.seq = c.seq);
        ALTER TABLE ${names.checkpoints} ADD CONSTRAINT ${names.checkpointEventKey}
          FOREIGN KEY (session, seq) REFERENCES ${names.events} (session, seq) ON DELETE CASCADE NOT VALID;
      END IF;
    END $do$;
    ${appendFunctionSql(names.events, names.turns, names.pending, names.append, names.channel)}`
  // One round trip, one implicit transaction (no BEGIN: a failed one would leave a pooled
  // connection in an aborted transaction). Instances that start at once on an empty database
  // may collide creating the first table; the one that lost migrates again.
  for (let attempt = 1; ; attempt++) {
    try {
      await (db.exec ? db.exec(sql) : db.query(sql))
      break
    } catch (error) {
      const code = codeOf(error)
      if (code === LOCK_NOT_AVAILABLE) throw new Error(migrateLockMessage(lockWaitMs))
      if (attempt >= 3 || (code !== UNIQUE_VIOLATION && code !== DUPLICATE_TABLE && code !== DUPLICATE_OBJECT)) throw error
    }
  }
  // The checkpoints kept from before the key (none orphaned: those went with its adding) are
  // checked now, while appends go on. A check that cannot get its lock is left to the next
  // migrate: the key already holds for every row written since it was added.
  const validate = `
    SELECT set_config('lock_timeout', '${lockWaitMs}ms', true);
    DO $do$ BEGIN
      IF EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = '${names.checkpoints}'::regclass AND conname = '${names.checkpointEventKey}' AND NOT convalidated) THEN
        ALTER TABLE ${names.checkpoints} VALIDATE CONSTRAINT ${names.checkpointEventKey};
      END IF;
    END $do$;`
  try {
    await (db.exec ? db.exec(validate) : db.query(validate))
  } catch (error) {
    if (codeOf(error) !== LOCK_NOT_AVAILABLE) throw error
  }
}

/**
 * This instance's pending selections (the pending store, R85): as it holds them, the writes of
 * them on their way, and the rows its own flushes deleted.
 */
class PendingSelections {
  /** P per session, as this instance holds it. */
  readonly #pending = new Map<string, boolean>()
  /** Per session: how many of its pending-store writes are on their way (R85). */
  readonly #inFlight = new Map<string, number>()
  /** Per session holding a pending selection: which `set` wrote it (a number of `#sets`). */
  readonly #setBy = new Map<string, number>()
  #sets = 0
  /**
   * The sessions whose pending row this instance's own `plan/mode` append deleted (its function
   * deletes a row that asks for the mode it logs, R16), with no pending write of this instance
   * since: the `delete` that follows the flush sends no statement.
   */
  readonly #deletedByAppend = new Set<string>()
  readonly #send: Send
  readonly #table: string

  constructor(send: Send, table: string) {
    this.#send = send
    this.#table = table
  }

  get(sessionId: string): boolean | undefined {
    return this.#pending.get(sessionId)
  }

  async set(sessionId: string, value: boolean): Promise<void> {
    this.#pending.set(sessionId, value)
    this.#deletedByAppend.delete(sessionId)
    this.#setBy.set(sessionId, ++this.#sets)
    await this.#write(sessionId, () =>
      this.#send(`INSERT INTO ${this.#table} (session, pending) VALUES ($1, $2) ON CONFLICT (session) DO UPDATE SET pending = excluded.pending`, [sessionId, value]),
    )
  }

  async delete(sessionId: string): Promise<void> {
    const dropped = this.#pending.get(sessionId)
    this.#pending.delete(sessionId)
    this.#setBy.delete(sessionId)
    // The flush's own append deleted the row (one statement per flush): nothing left to send.
    if (this.#deletedByAppend.delete(sessionId)) return
    // Only the selection this instance drops: another instance's newer one, written since, is
    // its own to drop, and must survive a restart until then.
    await this.#write(sessionId, () =>
      typeof dropped === 'boolean'
        ? this.#send(`DELETE FROM ${this.#table} WHERE session = $1 AND pending = $2`, [sessionId, dropped])
        : this.#send(`DELETE FROM ${this.#table} WHERE session = $1`, [sessionId]),
    )
  }

  /** A session was opened: `kept` is the pending row the database holds for it. */
  loaded(sessionId: string, kept: unknown): void {
    if (typeof kept === 'boolean') this.#pending.set(sessionId, kept)
    else this.#pending.delete(sessionId)
    this.#deletedByAppend.delete(sessionId)
  }

  /**
   * Called as a `plan/mode {active}` append is sent. When this instance's pending selection asks
   * for that mode and none of its pending writes for the session is on its way, the append deletes
   * that row, and this answers, once it was written, whether no `set` was called since (R85);
   * else it is undefined, the append leaves the table alone, and the flush's `delete` sends its statement.
   */
  clearedBy(sessionId: string, data: unknown): (() => boolean) | undefined {
    const active = typeof data === 'object' && data !== null ? (data as { active?: unknown }).active : undefined
    if (typeof active !== 'boolean' || this.#pending.get(sessionId) !== active || this.#inFlight.has(sessionId)) return undefined
    const setBy = this.#setBy.get(sessionId)
    return () => this.#setBy.get(sessionId) === setBy
  }

  /** This instance's own `plan/mode` append deleted the session's pending row. */
  markDeletedByAppend(sessionId: string): void {
    this.#deletedByAppend.add(sessionId)
  }

  /** Runs a pending-store write of a session, counted while it is on its way. */
  async #write(sessionId: string, write: () => Promise<unknown>): Promise<void> {
    this.#inFlight.set(sessionId, (this.#inFlight.get(sessionId) ?? 0) + 1)
    try {
      await write()
    } finally {
      const left = this.#inFlight.get(sessionId)! - 1
      if (left === 0) this.#inFlight.delete(sessionId)
      else this.#inFlight.set(sessionId, left)
    }
  }
}

/**
 * One instance's store at run time: its statements (`send`), the server's clock, its pending
 * selections, its open sessions and the one LISTEN that tells them of other instances' rows. Its
 * public fields are for the module's `Session`, which the host never reaches through it.
 */
class StoreInstance {
  readonly serverClock = new ServerClock()
  readonly pending: PendingSelections
  /** The open sessions, per session id. */
  readonly #sessions = new Map<string, Set<Session>>()
  /** The hints heard for sessions being opened: a session opened without any reads nothing more. */
  readonly #openings = new Map<string, Set<{ heard: number }>>()
  readonly #listen: PgListen
  #stopListening: Promise<() => Promise<void>> | undefined
  #closed = false

  constructor(
    readonly names: StoreNames,
    readonly send: Send,
    /** How long an append may take from its call, in ms (R83); undefined: no limit. */
    readonly appendTimeoutMs: number | undefined,
    listen: PgListen,
  ) {
    this.pending = new PendingSelections(send, names.pending)
    this.#listen = listen
  }

  /**
   * Listening starts with the first session; one LISTEN serves every session of the instance. A
   * LISTEN that failed (the server was down) is forgotten, so the next `openSession` tries again.
   */
  #ensureListening(): Promise<unknown> {
    if (this.#stopListening !== undefined) return this.#stopListening
    // Called as the host's function, not as a method of this instance: its `this` is undefined, as it always was.
    const listen = this.#listen
    const started = listen(
      this.names.channel,
      (payload) => {
        const note = readNotice(payload)
        if (note === undefined) return
        for (const opening of this.#openings.get(note.session) ?? []) opening.heard = Math.max(opening.heard, note.seq)
        for (const session of this.#sessions.get(note.session) ?? []) session.heard(note.seq)
      },
      () => {
        for (const set of this.#openings.values()) for (const opening of set) opening.heard = Infinity
        for (const set of this.#sessions.values()) for (const session of set) session.catchUp()
      },
    )
    this.#stopListening = started
    started.catch(() => {
      if (this.#stopListening === started) this.#stopListening = undefined
    })
    return started
  }

  /** Opens a session (`PostgresPlanStore.openSession`). */
  async open(sessionId: string): Promise<Session> {
    if (this.#closed) throw new Error('plan-mode postgres: the store is closed')
    checkSessionId(sessionId)
    const notOpened = (why: string) => new Error(`plan-mode postgres: session ${sessionId} was not opened: ${why}`)
    let checkpoint: PlanCheckpoint | undefined
    let loaded: SessionEvent[]
    let keptPending: unknown
    // The hints heard while the session loads: one after its rows were read means more to read.
    const opening = { heard: 0 }
    let watching = this.#openings.get(sessionId)
    if (watching === undefined) this.#openings.set(sessionId, (watching = new Set()))
    watching.add(opening)
    try {
      await this.#ensureListening()
      // One round trip: a first row with the checkpoint, the pending selection and the server's
      // clock (which the session's appends carry their deadlines in), then the rows from the
      // checkpoint's seq on (the event it ends at, then the ones after it), or the whole log.
      const { rows } = await this.send(
        `SELECT NULL::bigint AS seq, NULL::text AS type, NULL::jsonb AS data, NULL::json AS data_json, c.checkpoint,
           (SELECT p.pending FROM ${this.names.pending} p WHERE p.session = $1) AS pending, extract(epoch FROM clock_timestamp())::float8 * 1000 AS server_ms
         FROM (SELECT NULL) one LEFT JOIN ${this.names.checkpoints} c ON c.session = $1
         UNION ALL
         SELECT e.seq, e.type, e.data, e.data_json, NULL, NULL, NULL FROM ${this.names.events} e
           WHERE e.session = $1 AND e.seq >= COALESCE((SELECT c.seq FROM ${this.names.checkpoints} c WHERE c.session = $1), 1)
         ORDER BY seq NULLS FIRST`,
        [sessionId],
      )
      if (!Array.isArray(rows) || rows.length === 0) throw new Error('the database answered no rows')
      const [head, ...tail] = rows as Record<string, unknown>[]
      this.serverClock.read(head!.server_ms, now())
      const stored = head!.checkpoint
      const read = stored === undefined || stored === null ? undefined : readCheckpoint(stored, sessionId)
      // A checkpoint attach cannot use is not handed over: the whole log is loaded (R76). It is
      // loaded with the event it ends at, which must be that event (another log's is not).
      checkpoint = read === undefined || 'problem' in read ? undefined : read
      loaded = tail.map(rowEvent)
      // The rows were read from the checkpoint row's seq column: when its checkpoint is not used,
      // read them from seq 1 (a seq column past the log's end would otherwise load no row at all).
      const readFromCheckpointRow = stored !== undefined && stored !== null
      if ((checkpoint === undefined && (readFromCheckpointRow || (loaded[0] !== undefined && loaded[0].seq !== 1))) || (checkpoint !== undefined && checkpointEventProblem(checkpoint, loaded[0]) !== undefined)) {
        checkpoint = undefined
        const whole = (await this.send(`SELECT seq, type, data, data_json FROM ${this.names.events} WHERE session = $1 ORDER BY seq`, [sessionId])).rows
        if (!Array.isArray(whole)) throw new Error('the database answered no rows')
        loaded = (whole as Record<string, unknown>[]).map(rowEvent)
      }
      keptPending = head!.pending
    } catch (error) {
      throw notOpened(messageOf(error))
    } finally {
      watching.delete(opening)
      if (watching.size === 0 && this.#openings.get(sessionId) === watching) this.#openings.delete(sessionId)
    }
    // The log is folded whole or not at all: a hole would make every instance's fold wrong (R74).
    const missing = firstMissingSeq(loaded, checkpoint === undefined ? 0 : checkpoint.seq - 1)
    if (missing !== undefined) throw notOpened(`its log has no event at seq ${missing.seq} (the next row has seq ${missing.next})`)
    this.pending.loaded(sessionId, keptPending)
    const session = new Session(this, sessionId, loaded, checkpoint)
    let set = this.#sessions.get(sessionId)
    if (set === undefined) this.#sessions.set(sessionId, (set = new Set()))
    set.add(session)
    // Rows announced while it loaded may have come after its read: read them now.
    if (opening.heard > session.lastSeq) session.catchUp()
    return session
  }

  /** A closed session leaves the sessions the LISTEN tells. */
  forget(session: Session): void {
    const set = this.#sessions.get(session.sessionId)
    set?.delete(session)
    if (set?.size === 0) this.#sessions.delete(session.sessionId)
  }

  async close(): Promise<void> {
    this.#closed = true
    await Promise.all([...this.#sessions.values()].flatMap((set) => [...set].map((session) => session.close())))
    const stop = await this.#stopListening?.catch(() => undefined)
    await stop?.()
  }
}

/**
 * One open session of a store: its events as this instance has taken them, its appends in the
 * order they were called, and the reads that follow other instances' rows (R83, R84).
 */
class Session implements PostgresSessionLog {
  readonly events: SessionEvent[]
  readonly checkpoint: unknown
  readonly #listeners = new Set<(event: SessionEvent) => void>()
  /** The seq of the last event taken (the checkpoint's before any). */
  #last: number
  /** This instance's appends, one after another in the order they were called. */
  #chain: Promise<unknown> = Promise.resolve()
  /** This instance's appends not run yet: the seq of the next decision comes after theirs. */
  #appending = 0
  /** An append's statement is on its way: its answer brings the rows before its own. */
  #writing = false
  /** The highest seq a NOTIFY announced while an append was on its way: read after its answer. */
  #hinted = 0
  /** The reads of the rows after the last one taken, while they run: settles with the last one's failure, if any. */
  #reading: Promise<{ value?: unknown } | { failure: unknown }> | undefined
  /** A hint came while a read ran: one more read follows it (a burst costs two reads, not one each). */
  #readAgain = false
  #closed = false

  /** The store's instance: its names, statements (`send`), append timeout, server clock and pending selections. */
  readonly #instance: StoreInstance

  constructor(
    instance: StoreInstance,
    readonly sessionId: string,
    loaded: SessionEvent[],
    checkpoint: PlanCheckpoint | undefined,
  ) {
    this.#instance = instance
    this.events = loaded
    this.checkpoint = checkpoint
    this.#last = loaded.at(-1)?.seq ?? checkpoint?.seq ?? 0
  }

  /** The seq of the last event taken. */
  get lastSeq(): number {
    return this.#last
  }

  subscribe(listener: (event: SessionEvent) => void): () => void {
    this.#listeners.add(listener)
    return () => void this.#listeners.delete(listener)
  }

  append(type: string, data: unknown): Promise<SessionEvent> {
    // A decision (plan/mode, plan/review) is made on the log as it stands when it is called
    // (with this instance's own appends still on their way): its seq is fixed now, and an event
    // appended before it runs makes it stale (R84). Any other event decides nothing: it goes after
    // whatever is in the log when its turn comes.
    const decides = DECISIONS.has(type)
    const fixed = this.#last + 1 + this.#appending++
    const { appendTimeoutMs, serverClock, pending, names } = this.#instance
    // Counted from the call: waiting behind this instance's earlier appends is part of it (R83).
    const deadline = appendTimeoutMs === undefined ? undefined : now() + appendTimeoutMs
    const mayNotBeWritten = (why: string) => new Error(`plan-mode postgres: the ${type} event of session ${this.sessionId} may not have been written: ${why}`)
    const timedOut = () => mayNotBeWritten(`no answer from the database within ${appendTimeoutMs} ms`)
    const run = async (): Promise<SessionEvent> => {
      this.#appending--
      if (this.#closed) throw new Error(`plan-mode postgres: session ${this.sessionId} is closed; the ${type} event was not written`)
      if (deadline !== undefined && now() >= deadline) throw timedOut()
      if (decides && this.#last >= fixed) throw new Error(seqTakenMessage(this.sessionId, fixed, type))
      if (decides && this.#last + 1 < fixed) throw new Error(`plan-mode postgres: an earlier append of session ${this.sessionId} failed; the ${type} event decided after it was not written`)
      const json = JSON.stringify(data ?? null) ?? 'null' // a function or a symbol has no JSON: stored as null
      const stored = storedData(json)
      // A flush's `plan/mode` deletes the session's pending row that asks for its mode (R16): that
      // row is this instance's own, last written before this statement, so the flush's `delete`
      // is done. A `plan/mode` with no pending selection of that mode here (an idle `set`) leaves the table alone.
      const clears = type === PLAN_MODE_EVENT ? pending.clearedBy(this.sessionId, data) : undefined
      let retried = false
      for (let attempt = 1; ; attempt++) {
        const after = this.#last
        // The statement may reach the server late (a stalled connection, a pool with no free
        // client): it carries the deadline, so that it writes nothing once the append was reported timed out.
        const serverDeadline = deadline === undefined ? null : (serverClock.toServer(deadline) ?? null)
        this.#writing = true
        const statement = this.#instance.send(`SELECT * FROM ${names.append}($1, $2, $3::jsonb, $4::json, $5, $6, $7, $8)`, [
          this.sessionId,
          type,
          stored.jsonb,
          stored.json,
          decides ? fixed : null,
          after,
          serverDeadline,
          clears !== undefined,
        ])
        const outcome = await settledBy(statement, deadline)
        const answer = 'value' in outcome ? outcome.value : undefined
        let failure = 'failure' in outcome ? outcome.failure : undefined
        const answeredAt = now()
        this.#writing = false
        let own: number | undefined
        let pendingLeft: unknown
        try {
          if (answer !== undefined) ({ own, pendingLeft } = this.#takeAnswer(answer.rows, answeredAt))
        } catch (error) {
          failure = error // an answer that is not rows: the row may be there; it is read like another's
          this.catchUp()
        }
        // An answer taken whole holds every row up to its own: only a hint past that one is read.
        // One whose rows stopped short of its own (a gap: R74) covers only the rows taken.
        const covered = own !== undefined && this.#last >= own - 1 ? own : this.#last
        if (this.#hinted > covered) this.catchUp()
        this.#hinted = 0
        if (failure === DEADLINE) {
          // It writes nothing past the deadline it carries; one without (no clock read yet) may
          // still commit: its row is then read like another instance's.
          statement.then(() => this.catchUp(), () => {})
          throw timedOut()
        }
        const code = codeOf(failure)
        // The server refused it at its deadline, or its wait for the session's turn ran out: not written.
        if (code === DEADLINE_PASSED) {
          // The refusal carries the server's clock: a reading that came late (a paused process, a
          // suspended laptop) put the deadline it sent in the past, and this one heals it. Once,
          // and only within the append's own time, so a refused append is never written after it.
          serverClock.read(detailOf(failure), answeredAt)
          if (!retried && deadline !== undefined && now() < deadline) {
            retried = true
            continue
          }
          throw timedOut()
        }
        if (code === LOCK_NOT_AVAILABLE && serverDeadline !== null) throw timedOut()
        if (failure !== undefined) {
          if (code !== UNIQUE_VIOLATION) throw mayNotBeWritten(messageOf(failure))
          // A writer that does not take the session's turn took the seq: an event that decides
          // nothing goes after it; a decision was made on a view that is stale now.
          if (!decides && attempt < MAX_ATTEMPTS && (deadline === undefined || now() < deadline)) continue
          if ('failure' in (await settledBy(this.#read(), deadline))) this.catchUp()
          throw new Error(seqTakenMessage(this.sessionId, decides ? fixed : after + 1, type))
        }
        // Refused: the rows appended since the instance's view were taken (its subscribers heard them).
        if (own === undefined) throw new Error(seqTakenMessage(this.sessionId, fixed, type))
        if (pendingLeft === null && clears?.()) pending.markDeletedByAppend(this.sessionId)
        this.#take([{ seq: own, type, data: JSON.parse(json) as unknown }])
        for (let i = this.events.length - 1; i >= 0 && this.events[i]!.seq >= own; i--) if (this.events[i]!.seq === own) return this.events[i]!
        return { seq: own, type, data }
      }
    }
    const appended = this.#chain.then(run, run)
    this.#chain = appended.catch(() => {})
    return appended
  }

  /**
   * Takes the rows an append's function answered (the rows appended before its own, oldest
   * first) and returns the seq it wrote (undefined when it refused a decision) and the pending
   * row it left (`null` for none; a `plan/mode`'s).
   */
  #takeAnswer(rows: unknown, answeredAt: number): { own: number | undefined; pendingLeft: unknown } {
    if (!Array.isArray(rows)) throw new Error('the database answered no rows')
    let own: number | undefined
    let pendingLeft: unknown
    const before: SessionEvent[] = []
    for (const row of rows as Record<string, unknown>[]) {
      if (row.r_type === null) {
        own = Number(row.r_seq)
        pendingLeft = row.r_pending
        this.#instance.serverClock.read(row.r_now, answeredAt) // the server's clock when it decided to commit
      } else before.push(eventOf(row.r_seq, row.r_type, row.r_data, row.r_data_json))
    }
    this.#take(before)
    return { own, pendingLeft }
  }

  /**
   * A NOTIFY announced `seq`: a hint that rows may follow the last one taken, never an event
   * (any role that may connect may NOTIFY on the channel). While an append is on its way, its
   * answer brings the rows before its own; what was announced beyond is read after it.
   */
  heard(seq: number): void {
    if (seq <= this.#last) return
    if (this.#writing) this.#hinted = Math.max(this.#hinted, seq)
    else this.catchUp()
  }

  /**
   * Reads every row after the last one taken (after a hint, a dropped listening connection, an
   * open, or for a caller), once the read running now, if any, has ended. The store's own calls
   * do not wait for it: a failed read is tried again by the next hint.
   */
  catchUp(): Promise<void> {
    if (this.#closed) return Promise.resolve()
    if (this.#reading !== undefined) {
      this.#readAgain = true
    } else {
      const { appendTimeoutMs } = this.#instance
      this.#reading = (async () => {
        let outcome: { value?: unknown } | { failure: unknown }
        do {
          this.#readAgain = false
          // One the server does not answer does not hold the reads after it for longer than an append may take.
          outcome = await settledBy(this.#read(), appendTimeoutMs === undefined ? undefined : now() + appendTimeoutMs)
        } while (this.#readAgain && !this.#closed)
        this.#reading = undefined
        return outcome
      })()
    }
    const caughtUp = this.#reading.then((outcome) => {
      if (!('failure' in outcome)) return
      const why = outcome.failure === DEADLINE ? `no answer from the database within ${this.#instance.appendTimeoutMs} ms` : messageOf(outcome.failure)
      throw new Error(`plan-mode postgres: session ${this.sessionId} could not read its log: ${why}`)
    })
    caughtUp.catch(() => {}) // awaited by a caller, or not at all (a hint)
    return caughtUp
  }

  async #read(): Promise<void> {
    if (this.#closed) return
    const { rows } = await this.#instance.send(`SELECT seq, type, data, data_json FROM ${this.#instance.names.events} WHERE session = $1 AND seq > $2 ORDER BY seq`, [
      this.sessionId,
      this.#last,
    ])
    if (!Array.isArray(rows)) throw new Error('the database answered no rows')
    if (!this.#closed) this.#take(rows.map(rowEvent))
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
    this.#instance.forget(this)
    await this.#chain
  }
}

/** What a NOTIFY says: a session may have rows after `seq`. */
interface Notice {
  session: string
  seq: number
}

/**
 * Reads a NOTIFY payload, `[session, seq]` (an older version's `[session, seq, type, data]` too:
 * only its session and seq are read); anything else on the channel is ignored.
 */
function readNotice(payload: string): Notice | undefined {
  try {
    const [session, seq] = JSON.parse(payload) as [unknown, unknown]
    if (typeof session !== 'string' || typeof seq !== 'number' || !Number.isSafeInteger(seq)) return undefined
    return { session, seq }
  } catch {
    return undefined
  }
}

/**
 * The function every append calls (R83, R84). Past `p_deadline` (the server's epoch ms, null for
 * none) it writes nothing: its wait for the session's turn ends there (`lock_timeout`), and the
 * check just before it returns (its transaction then commits) refuses a write that came too late;
 * a refusal carries the server's clock (DETAIL), a reading for the instance.
 * It waits for the session's turn (a lock on the session's row of the turns table, granted in the
 * order asked), so each append sees the rows of the one before it; it writes the row after the
 * last one the table holds (or after `p_after`, the instance's view, should the table hold less),
 * unless it is a decision (`p_seq`) and something was appended since; with `p_forget_pending`, a
 * `plan/mode` it writes deletes the session's pending row that asks for the mode it logs (R16: P
 * goes once the log holds its target; so a flush is one statement, R85); it NOTIFYs
 * `[session, seq]`, and answers the rows after `p_after` it did not write, then its own seq as a
 * row whose type is null, with the server's clock (`r_now`) at that last check and, with
 * `p_forget_pending`, the session's pending row left after it (`r_pending`, null for none).
 */
function appendFunctionSql(events: string, turns: string, pending: string, name: string, channel: string): string {
  return `
        CREATE OR REPLACE FUNCTION ${name}(p_session text, p_type text, p_data jsonb, p_data_json json, p_seq bigint, p_after bigint, p_deadline float8, p_forget_pending boolean)
          RETURNS TABLE (r_seq bigint, r_type text, r_data jsonb, r_data_json json, r_now float8, r_pending boolean) LANGUAGE plpgsql AS $fn$
        DECLARE
          next_seq bigint;
          now_ms float8;
          left_pending boolean;
          deleted bigint;
          ignored text;
        BEGIN
          IF p_deadline IS NOT NULL THEN
            now_ms := extract(epoch FROM clock_timestamp())::float8 * 1000;
            IF now_ms >= p_deadline THEN
              RAISE EXCEPTION 'plan-mode: the append came after its deadline; nothing was written' USING ERRCODE = '${DEADLINE_PASSED}', DETAIL = now_ms::text;
            END IF;
            -- Assignments, not PERFORM: a simple expression skips a query's planning and executor.
            ignored := set_config('lock_timeout', LEAST(ceil(p_deadline - now_ms), 2147483647)::bigint || 'ms', true);
            -- The check before the commit is the last one: a commit that then waited for a
            -- synchronous standby would end past the deadline, and write what was reported timed out.
            IF current_setting('synchronous_commit') <> 'off' THEN
              ignored := set_config('synchronous_commit', 'local', true);
            END IF;
          END IF;
          -- The session's turn: a row lock on a table of the store's own, which a role without a
          -- privilege on it cannot take (anyone who may connect can take an advisory lock).
          PERFORM 1 FROM ${turns} t WHERE t.session = p_session FOR UPDATE;
          IF NOT FOUND THEN
            INSERT INTO ${turns} (session) VALUES (p_session) ON CONFLICT DO NOTHING;
            PERFORM 1 FROM ${turns} t WHERE t.session = p_session FOR UPDATE;
          END IF;
          -- A new snapshot per statement: the rows of the appends that held the turn before are seen.
          SELECT GREATEST(COALESCE(max(e.seq), 0), p_after) + 1 INTO next_seq FROM ${events} e WHERE e.session = p_session;
          IF p_seq IS NULL OR p_seq = next_seq THEN
            INSERT INTO ${events} (session, seq, type, data, data_json) VALUES (p_session, next_seq, p_type, p_data, p_data_json);
            IF p_forget_pending THEN
              IF p_type = '${PLAN_MODE_EVENT}' AND jsonb_typeof(p_data -> 'active') = 'boolean' THEN
                DELETE FROM ${pending} p WHERE p.session = p_session AND p.pending = (p_data ->> 'active')::boolean;
                GET DIAGNOSTICS deleted = ROW_COUNT;
              END IF;
              -- None deleted (another writer's row asks for the other mode, or none is there): the row left.
              IF deleted IS NULL OR deleted = 0 THEN
                SELECT p.pending INTO left_pending FROM ${pending} p WHERE p.session = p_session;
              END IF;
            END IF;
            PERFORM pg_notify('${channel}', json_build_array(p_session, next_seq)::text);
          ELSE
            next_seq := NULL;
          END IF;
          -- None between the instance's view and its own row: nothing to read.
          IF next_seq IS NULL OR next_seq > p_after + 1 THEN
            RETURN QUERY SELECT e.seq, e.type, e.data, e.data_json, NULL::float8, NULL::boolean FROM ${events} e
              WHERE e.session = p_session AND e.seq > p_after AND (next_seq IS NULL OR e.seq < next_seq) ORDER BY e.seq;
          END IF;
          IF next_seq IS NOT NULL THEN
            now_ms := extract(epoch FROM clock_timestamp())::float8 * 1000;
            IF now_ms >= p_deadline THEN
              RAISE EXCEPTION 'plan-mode: the append came after its deadline; nothing was written' USING ERRCODE = '${DEADLINE_PASSED}', DETAIL = now_ms::text;
            END IF;
            RETURN QUERY SELECT next_seq, NULL::text, NULL::jsonb, NULL::json, now_ms, left_pending;
          END IF;
        END $fn$;
        -- The calls of earlier versions' instances, still serving while the new ones start: the same
        -- append, in the same turns, which leaves the pending row to their own DELETE (with no
        -- deadline, for the oldest). An earlier version's migrate, run again, replaces these two
        -- alone: this version's appends call the function above.
        CREATE OR REPLACE FUNCTION ${name}(p_session text, p_type text, p_data jsonb, p_data_json json, p_seq bigint, p_after bigint, p_deadline float8)
          RETURNS TABLE (r_seq bigint, r_type text, r_data jsonb, r_data_json json, r_now float8) LANGUAGE sql AS $fn$
          SELECT a.r_seq, a.r_type, a.r_data, a.r_data_json, a.r_now FROM ${name}(p_session, p_type, p_data, p_data_json, p_seq, p_after, p_deadline, false) a
        $fn$;
        CREATE OR REPLACE FUNCTION ${name}(p_session text, p_type text, p_data jsonb, p_data_json json, p_seq bigint, p_after bigint)
          RETURNS TABLE (r_seq bigint, r_type text, r_data jsonb, r_data_json json) LANGUAGE sql AS $fn$
          SELECT a.r_seq, a.r_type, a.r_data, a.r_data_json FROM ${name}(p_session, p_type, p_data, p_data_json, p_seq, p_after, NULL::float8, false) a
        $fn$;`
}

/**
 * What jsonb cannot hold: U+0000 and lone surrogates, which `JSON.stringify` writes as `\u`
 * escapes. Such data goes to the `json` column, which keeps the text as it is (a `\\u0000` typed
 * as text matches too, harmlessly: it is kept exactly there as well).
 */
const JSONB_CANNOT_HOLD = /\\u(?:0000|d[89a-f])/i

/** Where an event's JSON is stored: `data` (jsonb) or, when jsonb cannot hold it, `data_json`. */
function storedData(json: string): { jsonb: string | null; json: string | null } {
  return JSONB_CANNOT_HOLD.test(json) ? { jsonb: null, json } : { jsonb: json, json: null }
}

/** A row as a log event: pg answers bigint as a string; `data_json` holds what `data` cannot. */
function eventOf(seq: unknown, type: unknown, data: unknown, dataJson: unknown): SessionEvent {
  return { seq: Number(seq), type: String(type), data: dataJson !== null && dataJson !== undefined ? dataJson : data }
}

/** pg's form of a named prepared statement. */
interface PgNamedQuery {
  name: string
  text: string
  values: unknown[]
}

/** Runs a query (text and params, or pg's named form); a port that throws or answers a thenable still gives a promise. */
function query(db: PgQueryable, text: string | PgNamedQuery, params?: unknown[]): Promise<{ rows: unknown }> {
  return new Promise((resolve, reject) => {
    try {
      // The named form only goes to a `db` that takes it (`namedStatements`): pg's `query(config)`.
      const answer = typeof text === 'string' ? db.query(text, params) : (db as unknown as { query(config: PgNamedQuery): Promise<{ rows: unknown }> }).query(text)
      Promise.resolve(answer).then(resolve, reject)
    } catch (error) {
      reject(error)
    }
  })
}

/** Whether `db` is `pg`'s `Pool` or `Client` (it connects and has no `exec`), read without trusting the object. */
function isPgDriver(db: PgQueryable): boolean {
  try {
    return typeof (db as { connect?: unknown }).connect === 'function' && typeof db.exec !== 'function'
  } catch {
    return false
  }
}

/**
 * The name of a statement's prepared form: a hash of its text (which holds the store's prefix), so
 * that two stores, or two versions, on one connection never give one name to two texts (pg refuses that).
 */
function statementName(text: string): string {
  // cyrb53: a 53-bit hash, enough to tell apart the store's dozen texts from any other's.
  let h1 = 0xdeadbeef
  let h2 = 0x41c6ce57
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    h1 = Math.imul(h1 ^ c, 2654435761)
    h2 = Math.imul(h2 ^ c, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return `plan_mode_${(4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36)}`
}

/** The failure `settledBy` tells when the deadline came first. */
const DEADLINE = Symbol('deadline')

/** This process's monotonic clock, in ms: the deadlines of appends and reads (a step of the wall clock moves none). */
function now(): number {
  return performance.now()
}

/** How `promise` settled, or the failure `DEADLINE` once `deadline` (on {@link now}'s clock) has passed first; never rejects. */
async function settledBy<T>(promise: Promise<T>, deadline: number | undefined): Promise<{ value: T } | { failure: unknown }> {
  if (deadline !== undefined && !(await waitAtMost(Math.max(0, deadline - now()), promise))) return { failure: DEADLINE }
  return promise.then(
    (value) => ({ value }),
    (failure: unknown) => ({ failure }),
  )
}

/** How long a reading of the server's clock is preferred to a later one that gives it less time. */
const CLOCK_READING_KEPT_MS = 60_000

/**
 * The server's clock as this instance reads it (R83): an append's deadline, on {@link now}'s clock,
 * is sent in the server's, so that clocks set apart change nothing. A reading is the server's time
 * at some instant before its answer arrived: `serverMs - answeredAt` is at most the true offset
 * (short of it by the answer's way back, and by any pause of this process before it took the
 * answer), so the deadline the server gets comes no later than the instance's own. The largest
 * such offset of the last minute is kept (the closest to the truth); an older one gives way to the
 * next reading, so a drift or a step of the server's clock is followed within a minute. Readings
 * come from `openSession`, every append's answer and every refusal at a deadline, so a reading
 * that came late (its deadlines already past on arrival) is replaced by the refusal it causes.
 */
class ServerClock {
  #offset: number | undefined
  #readAt = 0

  /** Takes a reading: `serverMs`, the server's epoch ms (untrusted), answered at `answeredAt` on {@link now}'s clock. */
  read(serverMs: unknown, answeredAt: number): void {
    const ms = typeof serverMs === 'string' ? Number(serverMs) : serverMs
    if (typeof ms !== 'number' || !Number.isFinite(ms)) return
    const offset = ms - answeredAt
    if (this.#offset === undefined || offset >= this.#offset || answeredAt - this.#readAt > CLOCK_READING_KEPT_MS) {
      this.#offset = offset
      this.#readAt = answeredAt
    }
  }

  /** `deadline` (on {@link now}'s clock) as the server's epoch ms, or undefined before any reading. */
  toServer(deadline: number): number | undefined {
    return this.#offset === undefined ? undefined : deadline + this.#offset
  }
}

/** The `query_timeout` of a `pg.Pool` (its `options`), read without trusting the object. */
function queryTimeoutOf(db: PgQueryable): number | undefined {
  try {
    const value = (db as { options?: { query_timeout?: unknown } }).options?.query_timeout
    return isTimeoutMs(value) && value > 0 ? value : undefined
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
  // PostgreSQL stores a lone surrogate as U+FFFD: two ids that differ only there would share one log.
  if (/\p{Cs}/u.test(sessionId)) throw new TypeError('plan-mode postgres: a session id must be well-formed UTF-16 (no lone surrogate)')
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

/** A row of the events table as a log event. */
function rowEvent(row: Record<string, unknown>): SessionEvent {
  return eventOf(row.seq, row.type, row.data, row.data_json)
}

/** The DETAIL of a driver's error (the server's clock, in a refusal at the deadline), read without trusting the object. */
function detailOf(error: unknown): unknown {
  try {
    return (error as { detail?: unknown } | null | undefined)?.detail
  } catch {
    return undefined
  }
}

/** The SQLSTATE of a driver's error, read without trusting the object (a throwing getter gives none). */
function codeOf(error: unknown): unknown {
  try {
    return (error as { code?: unknown } | null | undefined)?.code
  } catch {
    return undefined
  }
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
