import { once } from 'node:events'
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http'
import { createHash, randomUUID } from 'node:crypto'
import type { PGlite } from '@electric-sql/pglite'
import { startPGlite } from '../apps/shared/pglite-cache.js'
import { wrapLanguageModel, type LanguageModel } from 'ai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { offlineChatModel } from '../apps/shared/offline-model.js'
import { pgliteListen, type PgListen, type PgQueryable } from '../src/adapters/postgres.js'
import { clusterProxy } from '../apps/web/cluster.js'
import { DEFAULT_MAX_SESSIONS, SECTION, startWebChat, type WebChat, type WebChatOptions } from '../apps/web/server.js'
import { labelsOf } from '../apps/shared/visualizer/chart-layout.js'
import { chartModel } from '../apps/shared/visualizer/client/chart.js'
import type { StateNodeDefinition } from '../apps/shared/visualizer/client/model.js'
import { sharedChromium } from './fixtures/browser.js'
import { webClient, type WebClient } from './web-client.js'

/**
 * The web chat's server at the HTTP level, as an attacker meets it (#23, defects 16–18): plain
 * `fetch` and `http.request` to an instance on 127.0.0.1 (PGlite, the offline model at full
 * speed), and to the cluster's proxy in front of it. A "browser" here is a cookie jar of one
 * cookie (the owner cookie the server sets, R103) and the page's own Origin (`webClient`).
 */

type Part = { type: string; text?: string; state?: string; toolCallId?: string; input?: unknown; approval?: { id: string; approved?: boolean; reason?: string; signature?: string } }
type Message = { id: string; role: string; parts: Part[] }
type ReviewState = { reviewId: string; plan: string; callId?: string }

const NO_CHAT = { error: 'no such chat' }
const TURN_TAKEN = 'Another answer is being written in this chat; wait for it to end, then send again.'
const CARD_LOST = 'This chat changed in another tab: reload the page to answer the open plan review.'
const TWO_OWNERS = { error: "more than one plan_mode_owner cookie (a page on another port of this host may have set one): clear this host's cookies, then reload" }

/** An owner cookie as the server signs it (R103): 32 random bytes, then their HMAC, both base64url. */
const SIGNED_OWNER = /^plan_mode_owner=([A-Za-z0-9_-]{43})\.([A-Za-z0-9_-]{43})$/
/** The owner id inside a `plan_mode_owner=<id>.<signature>` cookie. */
const ownerIdOf = (cookie: string | undefined) => SIGNED_OWNER.exec(cookie ?? '')?.[1]

let lite: PGlite
let web: WebChat

beforeAll(async () => {
  lite = await startPGlite()
  web = await startWebChat({ db: lite, listen: pgliteListen(lite), instance: 'x', model: offlineChatModel({ section: SECTION, chunkDelayMs: 0, replyDelayMs: 0 }) })
})

afterAll(async () => {
  await web?.close()
  await lite?.close()
})

/** A browser on the chat's page at `base`: the page's Origin, its own owner cookie once the server set one. */
const browser = (base: string) => webClient(base)
type Browser = WebClient

/** A response's status and body: its JSON, or its text when it is not JSON (a stream). */
const answer = async (response: Response) => {
  const text = await response.text()
  return [response.status, response.headers.get('content-type')?.startsWith('application/json') ? (JSON.parse(text) as unknown) : text] as const
}

/** The chunks of a UI message stream (server-sent events). */
const chunksOf = (text: string) =>
  text
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
    .map((line) => JSON.parse(line.slice(6)) as { type: string; errorText?: string })

async function savedMessages(who: Browser, chat: string): Promise<Message[]> {
  return ((await (await who.get(`/api/chats/${chat}`)).json()) as { messages: Message[] }).messages
}

async function openReviewOf(who: Browser, chat: string): Promise<ReviewState | null> {
  return ((await (await who.get(`/api/chats/${chat}/state`)).json()) as { review: ReviewState | null }).review
}

/** The card of `callId` in saved messages, or undefined. */
const cardOf = (messages: Message[], callId: string | undefined) => messages.flatMap((m) => m.parts).find((p) => p.type === 'tool-exit_plan_mode' && p.toolCallId === callId)

/** `/plan <task>` and the chat sent on, up to the review card: the saved messages and the open review. */
async function planUpToReview(who: Browser, chat: string, task = 'add a cache'): Promise<{ messages: Message[]; review: ReviewState }> {
  const { steered } = (await (await who.post(`/api/chats/${chat}/command`, { input: task })).json()) as { steered: string }
  await (await who.post('/api/chat', { id: chat, messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: steered }] }] })).text()
  let messages: Message[] = []
  let review: ReviewState | null = null
  await expect
    .poll(async () => {
      messages = await savedMessages(who, chat)
      review = await openReviewOf(who, chat)
      return cardOf(messages, review?.callId)?.state
    })
    .toBe('approval-requested')
  return { messages, review: review! }
}

/** The messages with the waiting card answered as `useChat`'s `addToolApprovalResponse` would. */
const answered = (messages: Message[], approval: { approved: boolean; reason?: string; id?: string }) =>
  messages.map((m) => ({
    ...m,
    parts: m.parts.map((p) => (p.state === 'approval-requested' ? { ...p, state: 'approval-responded', approval: { ...p.approval!, ...approval } } : p)),
  }))

async function logOf(db: PGlite, chat: string) {
  return (await db.query<{ seq: number; type: string; data: Record<string, unknown> }>('SELECT seq, type, data FROM web_events WHERE session = $1 ORDER BY seq', [chat])).rows
}

const closingRecords = async (db: PGlite, chat: string, reviewId: string) =>
  (await logOf(db, chat)).filter((e) => e.type === 'plan/review' && e.data.reviewId === reviewId && e.data.outcome !== 'requested')

/** One request with exactly the headers given (Host included), its status and JSON body. */
function rawRequest(url: string, path: string, headers: Record<string, string>): Promise<[number, unknown]> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(new URL(path, url), { headers, agent: false }, (response) => {
      let text = ''
      response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk))
      response.on('end', () => resolve([response.statusCode ?? 0, JSON.parse(text) as unknown]))
    })
    req.on('error', reject)
    req.end()
  })
}

/** `model` made to give every call of a tool the same id, `<tool>-call`, as some providers and mocks do (R82). */
const oneCallIdPerTool = (model: LanguageModel): LanguageModel =>
  wrapLanguageModel({
    model: model as Parameters<typeof wrapLanguageModel>[0]['model'],
    middleware: {
      specificationVersion: 'v3',
      wrapStream: async ({ doStream }) => {
        const { stream, ...rest } = await doStream()
        const renamed = stream.pipeThrough(
          new TransformStream({
            transform(chunk, controller) {
              controller.enqueue(chunk.type === 'tool-call' ? { ...chunk, toolCallId: `${chunk.toolName}-call` } : chunk)
            },
          }),
        )
        return { stream: renamed, ...rest }
      },
    },
  })

describe('R103: a chat is the browser\'s that created it', () => {
  it('R103: a browser\'s first request gets a signed owner cookie, HttpOnly and SameSite=Strict; its first POST on a chat writes only the id\'s hash into the chat\'s row', async () => {
    const chat = randomUUID()
    const response = await fetch(new URL(`/api/chats/${chat}`, web.url), { headers: { origin: new URL(web.url).origin } })
    expect(response.status).toBe(404) // a chat nobody has written in yet
    const [cookie] = response.headers.getSetCookie()
    const [, pair] = /^(plan_mode_owner=[^;]*); Path=\/; HttpOnly; SameSite=Strict; Max-Age=31536000$/.exec(cookie ?? '') ?? []
    const id = ownerIdOf(pair)
    expect(id).toBeDefined()
    const owner = webClient(web.url, { cookie: pair })
    expect((await owner.post(`/api/chats/${chat}/command`, { input: 'add a cache' })).status).toBe(200)
    const { rows } = await lite.query<{ owner: string }>('SELECT owner FROM web_chats WHERE id = $1', [chat])
    expect(rows).toEqual([{ owner: createHash('sha256').update(id!).digest('hex') }])
    // The same browser is the owner from then on.
    const again = await fetch(new URL(`/api/chats/${chat}/state`, web.url), { headers: { cookie: pair! } })
    expect([again.status, again.headers.getSetCookie()]).toEqual([200, []])
  })

  it('R103: the page\'s load (GET /) and the chart (GET /api/chart) give a fresh browser its owner cookie, before any chat request', async () => {
    for (const path of ['/', '/api/chart']) {
      const response = await fetch(new URL(path, web.url))
      await response.arrayBuffer()
      expect([path, response.headers.getSetCookie().map((cookie) => cookie.replace(/=[A-Za-z0-9_-]{43}\.[A-Za-z0-9_-]{43};/, '=<id>.<signature>;'))]).toEqual([
        path,
        ['plan_mode_owner=<id>.<signature>; Path=/; HttpOnly; SameSite=Strict; Max-Age=31536000'],
      ])
    }
  })

  it('R103: two tabs of a browser that loaded the page, whose first chat requests run at once, have one owner: both chats stay theirs', async () => {
    const tabs = browser(web.url)
    await (await tabs.get('/')).arrayBuffer() // the page's load
    const [first, second] = [randomUUID(), randomUUID()]
    await Promise.all([first, second].map(async (chat) => (await tabs.post(`/api/chats/${chat}/command`, { input: 'add a cache' })).arrayBuffer()))
    const statuses = []
    for (const chat of [first, second]) statuses.push((await tabs.get(`/api/chats/${chat}`)).status)
    expect(statuses).toEqual([200, 200])
  })

  it('R103: another browser cannot read a chat: its messages and its state answer 404 no such chat, with or without a cookie of its own', async () => {
    const owner = browser(web.url)
    const chat = randomUUID()
    await planUpToReview(owner, chat)
    const stranger = browser(web.url)
    await stranger.post(`/api/chats/${randomUUID()}/command`, { input: 'add a cache' }) // a chat of its own: it has an owner cookie now
    for (const who of [browser(web.url), stranger]) {
      expect(await answer(await who.get(`/api/chats/${chat}`))).toEqual([404, NO_CHAT])
      expect(await answer(await who.get(`/api/chats/${chat}/state`))).toEqual([404, NO_CHAT])
    }
  })

  it('R103: another browser cannot act on a chat: answering its review, a /plan in it and a chat request answer 404 no such chat, and its log does not change', async () => {
    const owner = browser(web.url)
    const chat = randomUUID()
    const { messages, review } = await planUpToReview(owner, chat)
    const before = await logOf(lite, chat)
    const stranger = browser(web.url)
    expect(await answer(await stranger.post(`/api/chats/${chat}/review`, { reviewId: review.reviewId, decision: 'Leave plan mode' }))).toEqual([404, NO_CHAT])
    expect(await answer(await stranger.post(`/api/chats/${chat}/command`, { input: 'off' }))).toEqual([404, NO_CHAT])
    expect(await answer(await stranger.post('/api/chat', { id: chat, messages: answered(messages, { approved: true }) }))).toEqual([404, NO_CHAT])
    expect(await logOf(lite, chat)).toEqual(before)
    expect((await openReviewOf(owner, chat))?.reviewId).toBe(review.reviewId)
  })

  it('R103: a review answer on chat A naming chat B\'s open review is refused 409 and changes nothing in either chat', async () => {
    const owner = browser(web.url)
    const [a, b] = [randomUUID(), randomUUID()]
    const reviewA = (await planUpToReview(owner, a)).review
    const reviewB = (await planUpToReview(owner, b)).review
    const response = await owner.post(`/api/chats/${a}/review`, { reviewId: reviewB.reviewId, decision: 'Approve in a fresh context' })
    expect(response.status).toBe(409)
    expect([(await openReviewOf(owner, a))?.reviewId, (await openReviewOf(owner, b))?.reviewId]).toEqual([reviewA.reviewId, reviewB.reviewId])
  })
})

describe('R103: an owner cookie is one the server signed, and only one', () => {
  it('R103: an owner cookie the server did not sign is no owner: a browser holding one gets a new signed cookie, and a client holding the forged one reads its chat 404', async () => {
    const signed = browser(web.url)
    await (await signed.get('/')).arrayBuffer()
    const other = browser(web.url)
    await (await other.get('/')).arrayBuffer()
    const [id = '', signature = ''] = signed.cookie!.slice('plan_mode_owner='.length).split('.')
    const [, otherSignature = ''] = other.cookie!.slice('plan_mode_owner='.length).split('.')
    const forgeries = {
      'a made-up id': 'A'.repeat(43),
      'a made-up id, made-up signature': `${'B'.repeat(43)}.${'C'.repeat(43)}`,
      'a signed id alone': id,
      'a signed id, another id\'s signature': `${id}.${otherSignature}`,
      'a signed id, its signature cut short': `${id}.${signature.slice(0, 42)}`,
    }
    const outcomes: Record<string, unknown> = {}
    for (const [name, value] of Object.entries(forgeries)) {
      const victim = webClient(web.url, { cookie: `plan_mode_owner=${value}` })
      const chat = randomUUID()
      const created = await victim.post(`/api/chats/${chat}/command`, { input: 'add a cache' })
      const attacker = webClient(web.url, { cookie: `plan_mode_owner=${value}` })
      outcomes[name] = {
        created: created.status,
        newCookie: SIGNED_OWNER.test(victim.cookie ?? '') && victim.cookie !== `plan_mode_owner=${value}`,
        attackerReads: (await attacker.get(`/api/chats/${chat}`)).status,
      }
    }
    expect(outcomes).toEqual(Object.fromEntries(Object.keys(forgeries).map((name) => [name, { created: 200, newCookie: true, attackerReads: 404 }])))
  })

  it('R103: a request carrying two owner cookies is refused 400, even when the server signed both, and creates no chat', async () => {
    const [one, two] = [browser(web.url), browser(web.url)]
    for (const who of [one, two]) await (await who.get('/')).arrayBuffer()
    const both = webClient(web.url, { cookie: `${one.cookie}; ${two.cookie}` })
    const chat = randomUUID()
    const answers = [await answer(await both.post(`/api/chats/${chat}/command`, { input: 'add a cache' })), await answer(await both.get(`/api/chats/${chat}`))]
    expect(answers).toEqual([
      [400, TWO_OWNERS],
      [400, TWO_OWNERS],
    ])
    expect((await lite.query('SELECT id FROM web_chats WHERE id = $1', [chat])).rows).toEqual([])
    expect(await logOf(lite, chat)).toEqual([])
  })

  describe('a page on another port of the same host (cookies ignore ports)', () => {
    let evil: Server
    let evilUrl = ''
    /** The owner id the attacker chose, as a cookie with a longer Path: the browser sends it first. */
    const FIXED = 'A'.repeat(43)
    beforeAll(async () => {
      evil = createServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html' })
        res.end(`<script>document.cookie = "plan_mode_owner=${FIXED}; Path=/api; Max-Age=3600"</script><p>nothing to see</p>`)
      })
      await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve))
      evilUrl = `http://127.0.0.1:${(evil.address() as { port: number }).port}/`
    })
    afterAll(async () => {
      evil.closeAllConnections()
      await new Promise<void>((resolve) => evil.close(() => resolve()))
    })

    it('R103: a page on another loopback port that plants an owner cookie of its choosing does not become the owner: the browser\'s chat requests carrying both cookies are refused 400, and a client holding the planted id reads the chat 404', async () => {
      // The run's one Chromium (a context of its own: its own cookies), not one launched for this test.
      const chromium = await sharedChromium()
      try {
        const context = await chromium.newContext()
        const page = await context.newPage()
        // The victim has used the chat before: it holds its own owner cookie (Path=/).
        await page.goto(new URL('/api/chart', web.url).href)
        expect((await context.cookies(web.url)).find((c) => c.name === 'plan_mode_owner')?.httpOnly).toBe(true)
        // The victim visits a page on another port of the loopback, then comes back and starts a chat.
        await page.goto(evilUrl)
        await page.goto(new URL('/api/chart', web.url).href)
        const chat = randomUUID()
        const victim = await page.evaluate(async (id) => {
          const post = (path: string, body: unknown) => fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
          const answers: [number, unknown][] = []
          for (const response of [await fetch(`/api/chats/${id}`), await post(`/api/chats/${id}/command`, { input: 'add a cache' })]) answers.push([response.status, await response.json()])
          return answers
        }, chat)
        // The attacker: any HTTP client on the machine, holding the id it planted.
        const attacker = webClient(web.url, { cookie: `plan_mode_owner=${FIXED}` })
        expect({ victim, attackerReads: (await attacker.get(`/api/chats/${chat}`)).status }).toEqual({
          victim: [
            [400, TWO_OWNERS],
            [400, TWO_OWNERS],
          ],
          attackerReads: 404,
        })
        expect(await logOf(lite, chat)).toEqual([])
      } finally {
        await chromium.close()
      }
    }, 120_000)
  })
})

describe('R104: what a request must be', () => {
  it('R104: a cross-site POST is refused with 403 cross-site request refused (text/plain with Origin http://evil.example or null, or no Origin), even with the owner\'s cookie; the review stays open and plan mode on', async () => {
    const owner = browser(web.url)
    const chat = randomUUID()
    const { review } = await planUpToReview(owner, chat)
    const before = await logOf(lite, chat)
    const answers = []
    const origins = ['http://evil.example', 'null', undefined]
    for (const origin of origins) {
      for (const [path, body] of [
        [`/api/chats/${chat}/command`, { input: 'off' }],
        [`/api/chats/${chat}/review`, { reviewId: review.reviewId, decision: 'Leave plan mode' }],
      ] as const) {
        const response = await fetch(new URL(path, web.url), {
          method: 'POST',
          headers: { 'content-type': 'text/plain', ...(owner.cookie ? { cookie: owner.cookie } : {}), ...(origin !== undefined ? { origin } : {}) },
          body: JSON.stringify(body),
        })
        answers.push([origin, path.split('/').pop(), ...(await answer(response))])
      }
    }
    expect(answers).toEqual(origins.flatMap((origin) => ['command', 'review'].map((route) => [origin, route, 403, { error: 'cross-site request refused' }])))
    expect(await logOf(lite, chat)).toEqual(before)
    expect((await openReviewOf(owner, chat))?.reviewId).toBe(review.reviewId)
  })

  it('R104: an Origin that is not exactly http://<Host> is refused 403: a trailing slash, another port, https, localhost for 127.0.0.1, no port', async () => {
    const owner = browser(web.url)
    const chat = randomUUID()
    await (await owner.post(`/api/chats/${chat}/command`, { input: 'add a cache' })).arrayBuffer()
    const { port } = new URL(web.url)
    const origins = [`http://127.0.0.1:${port}/`, `http://127.0.0.1:${Number(port) + 1}`, `https://127.0.0.1:${port}`, `http://localhost:${port}`, 'http://127.0.0.1']
    const answers = []
    for (const origin of origins) {
      const response = await owner.send(`/api/chats/${chat}/command`, { method: 'POST', body: JSON.stringify({ input: 'off' }), headers: { 'content-type': 'application/json', origin } })
      answers.push([origin, ...(await answer(response))])
    }
    expect(answers).toEqual(origins.map((origin) => [origin, 403, { error: 'cross-site request refused' }]))
  })

  it('R104: a JSON route takes only application/json: a text/plain body from the page\'s own origin answers 415 and changes nothing', async () => {
    const owner = browser(web.url)
    const chat = randomUUID()
    await planUpToReview(owner, chat)
    const before = await logOf(lite, chat)
    const response = await owner.send(`/api/chats/${chat}/command`, { method: 'POST', body: JSON.stringify({ input: 'off' }), headers: { 'content-type': 'text/plain' } })
    expect(await answer(response)).toEqual([415, { error: 'the body must be JSON (content-type: application/json)' }])
    expect(await logOf(lite, chat)).toEqual(before)
  })

  it('R104: malformed UI messages answer 400 naming what is wrong, never 500', async () => {
    const owner = browser(web.url)
    const chat = randomUUID()
    const refused = { error: 'messages must be an array of AI SDK UI messages ({ id, role, parts })' }
    const malformed = [
      'hello',
      [{ id: 'u1', role: 'user', parts: 'hello' }],
      [{ id: 'u1', role: 'user', parts: [null] }],
      [{ id: 'u1', role: 'user', parts: [{ type: 'text' }] }],
      [{ id: 'u1', role: 'robot', parts: [{ type: 'text', text: 'hi' }] }],
      [{ role: 'user', parts: [{ type: 'text', text: 'hi' }] }],
    ]
    const answers = []
    for (const messages of malformed) answers.push([messages, ...(await answer(await owner.post('/api/chat', { id: chat, messages })))])
    expect(answers).toEqual(malformed.map((messages) => [messages, 400, refused]))
  })

  it('R104: a JSON body nested 100,000 levels deep answers 400, never 500', async () => {
    const owner = browser(web.url)
    const chat = randomUUID()
    const deep = '['.repeat(100_000) + ']'.repeat(100_000)
    const body = `{"id":"${chat}","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi","providerMetadata":{"x":${deep}}}]}]}`
    const response = await owner.send('/api/chat', { method: 'POST', body, headers: { 'content-type': 'application/json' } })
    expect(await answer(response)).toEqual([400, { error: 'the body is nested too deeply (at most 64 levels)' }])
  })
})

describe('R83: text holding U+0000 in the web chat', () => {
  it('R83: a chat message holding U+0000 is answered and saved exactly, never a 500 (jsonb cannot hold it)', async () => {
    const owner = browser(web.url)
    const chat = randomUUID()
    const text = 'what is in\u0000 the README?'
    const response = await owner.post('/api/chat', { id: chat, messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text }] }] })
    const [status, body] = await answer(response)
    expect(status).toBe(200)
    expect(chunksOf(body as string).filter((chunk) => chunk.type === 'error')).toEqual([])
    const saved = await savedMessages(owner, chat)
    expect(saved[0]).toMatchObject({ id: 'u1', role: 'user', parts: [{ type: 'text', text }] })
    expect(saved.length).toBeGreaterThan(1) // the answer was saved too
  })
})

describe('R104: the cluster proxy checks what an instance checks', () => {
  let proxy: Server | undefined
  let proxyUrl = ''
  beforeAll(async () => {
    proxy = clusterProxy([{ name: 'x', url: web.url }])
    await new Promise<void>((resolve) => proxy!.listen(0, '127.0.0.1', resolve))
    proxyUrl = `http://127.0.0.1:${(proxy.address() as { port: number }).port}/`
  })
  afterAll(async () => {
    proxy?.closeAllConnections()
    await new Promise<void>((resolve) => (proxy ? proxy.close(() => resolve()) : resolve()))
  })

  it('requests arriving at once while one of two instances refuses connections (killed) all reach the other: a request whose instance refused is retried on one it has not tried, never on the refusing one again (a 502 failed the web chat\'s killed-instance test when two files ran at once)', async () => {
    // A port nothing listens on: an instance that was killed.
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const deadUrl = `http://127.0.0.1:${(closed.address() as { port: number }).port}/`
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const served: { instance: string; method: string; path: string }[] = []
    const twoInstances = clusterProxy([{ name: 'dead', url: deadUrl }, { name: 'x', url: web.url }], served)
    await new Promise<void>((resolve) => twoInstances.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${(twoInstances.address() as { port: number }).port}/api/chart`
      const statuses = await Promise.all(Array.from({ length: 24 }, () => fetch(url).then((response) => response.status)))
      expect(statuses).toEqual(Array.from({ length: 24 }, () => 200))
      expect(new Set(served.map((s) => s.instance))).toEqual(new Set(['x']))
    } finally {
      twoInstances.closeAllConnections()
      await new Promise<void>((resolve) => twoInstances.close(() => resolve()))
    }
  })

  it('R104: through the proxy, Host: evil.example answers 421, as the instance alone does (DNS rebinding)', async () => {
    const refused = [421, { error: 'this server answers only to 127.0.0.1 and localhost' }]
    expect(await rawRequest(web.url, '/api/chart', { host: 'evil.example' })).toEqual(refused)
    expect(await rawRequest(proxyUrl, '/api/chart', { host: 'evil.example' })).toEqual(refused)
  })

  it('R104: the proxy streams a body and answers 413 once it passes the 4 MiB cap, before the client has sent it all (it does not buffer)', async () => {
    const req = httpRequest(new URL('/api/chat', proxyUrl), {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', origin: new URL(proxyUrl).origin }, // chunked: no length to refuse up front
    })
    req.on('error', () => {}) // the proxy closes the connection once it has answered
    const response = new Promise<IncomingMessage>((resolve) => req.once('response', resolve))
    let answeredFirst = false
    void response.then(() => (answeredFirst = true))
    const chunk = Buffer.alloc(64 * 1024, 0x20)
    const LIMIT = 64 * 1024 * 1024 // far over the cap: a proxy that buffers reads it all before anything answers
    let sent = 0
    while (!answeredFirst && sent < LIMIT) {
      sent += chunk.length
      if (!req.write(chunk)) await Promise.race([once(req, 'drain'), response])
    }
    const ended = !answeredFirst
    if (ended) req.end()
    const answer = await response
    let text = ''
    for await (const part of answer) text += String(part)
    expect({ status: answer.statusCode, body: JSON.parse(text) as unknown, endedBeforeTheAnswer: ended }).toEqual({
      status: 413,
      body: { error: 'request body too large' },
      endedBeforeTheAnswer: false,
    })
    expect(sent).toBeLessThan(LIMIT)
    req.destroy()
  })
})

describe('R105: approvals are signed by the server, per chat', () => {
  it('R105: an approval the client made up (an approval id it chose, unsigned) approves nothing: the review stays open and its card stays saved, waiting', async () => {
    const owner = browser(web.url)
    const chat = randomUUID()
    const { messages, review } = await planUpToReview(owner, chat)
    const forged = messages.map((m) => ({
      ...m,
      parts: m.parts.map((p) => (p.state === 'approval-requested' ? { ...p, state: 'approval-responded', approval: { id: 'approval-i-chose', approved: true } } : p)),
    }))
    const text = await (await owner.post('/api/chat', { id: chat, messages: forged })).text()
    expect(chunksOf(text).filter((c) => c.type === 'error').map((c) => c.errorText)).toEqual([
      `Tool approval signature verification failed for approval "approval-i-chose" (tool call "${review.callId}"): missing signature`,
    ])
    expect(await closingRecords(lite, chat, review.reviewId)).toEqual([])
    expect((await openReviewOf(owner, chat))?.reviewId).toBe(review.reviewId)
    expect(cardOf(await savedMessages(owner, chat), review.callId)?.state).toBe('approval-requested')
  })

  it('R105: the card\'s own approval, signed by the server, approves the plan', async () => {
    const owner = browser(web.url)
    const chat = randomUUID()
    const { messages, review } = await planUpToReview(owner, chat)
    expect(cardOf(messages, review.callId)?.approval?.signature).toMatch(/^[A-Za-z0-9_-]{43}$/)
    const text = await (await owner.post('/api/chat', { id: chat, messages: answered(messages, { approved: true }) })).text()
    expect(chunksOf(text).filter((c) => c.type === 'error')).toEqual([])
    expect((await closingRecords(lite, chat, review.reviewId)).map((e) => e.data.outcome)).toEqual(['approved'])
    expect(cardOf(await savedMessages(owner, chat), review.callId)?.state).toBe('output-available')
  })

  describe('with a model that gives every call of a tool the same id', () => {
    // On the file's PGlite, as the file's other instances (a PGlite of its own cost ~1.5 s of CPU
    // to start): its chats are new ids of their own.
    let sameIds: WebChat
    beforeAll(async () => {
      const model = oneCallIdPerTool(offlineChatModel({ section: SECTION, chunkDelayMs: 0, replyDelayMs: 0 }))
      sameIds = await startWebChat({ db: lite, listen: pgliteListen(lite), instance: 'y', model })
    })
    afterAll(async () => {
      await sameIds?.close()
    })

    it('R105: an approval signed in another chat approves nothing, though both exit calls have the same id', async () => {
      const owner = browser(sameIds.url)
      const [first, second] = [randomUUID(), randomUUID()]
      const signed = await planUpToReview(owner, first, 'add a cache')
      const { messages, review } = await planUpToReview(owner, second, 'drop the cache')
      const card = cardOf(signed.messages, signed.review.callId)!
      expect(card.toolCallId).toBe(review.callId) // the same call id in both chats
      // The first chat's signed card, approved, in place of the second chat's card.
      const replayed = messages.map((m) => ({
        ...m,
        parts: m.parts.map((p) => (p.toolCallId === review.callId ? { ...card, state: 'approval-responded', approval: { ...card.approval!, approved: true } } : p)),
      }))
      const text = await (await owner.post('/api/chat', { id: second, messages: replayed })).text()
      expect(chunksOf(text).filter((c) => c.type === 'error').map((c) => c.errorText)).toEqual([
        `Tool approval signature verification failed for approval "${card.approval!.id}" (tool call "${review.callId}"): invalid signature`,
      ])
      expect(await closingRecords(lite, second, review.reviewId)).toEqual([])
      expect((await openReviewOf(owner, second))?.reviewId).toBe(review.reviewId)
    })
  })
})

/**
 * `startWebChat` on the test's database with each of `given` in turn: what each start answered
 * (`TypeError: <message>` for a TypeError, else its error, or `started`: the instance then closed),
 * and every statement the starts sent the database.
 */
async function startsWith(instance: string, given: Partial<WebChatOptions>[]): Promise<{ answers: string[]; statements: string[] }> {
  const statements: string[] = []
  const watched: PgQueryable = {
    query: (text, params) => (statements.push(text), lite.query(text, params)),
    exec: (sql) => (statements.push(sql), lite.exec(sql)),
  }
  const answers = []
  for (const options of given) {
    answers.push(
      await startWebChat({ db: watched, listen: pgliteListen(lite), instance, ...options }).then(
        async (started) => (await started.close(), 'started'),
        (error: unknown) => (error instanceof TypeError ? `TypeError: ${error.message}` : String(error)),
      ),
    )
  }
  return { answers, statements }
}

describe('R105: the deployment\'s approval secret', () => {
  it('R105: an approval secret shorter than 32 characters: startWebChat rejects with TypeError(\'the approval secret must be at least 32 characters\') before it touches the database', async () => {
    expect(await startsWith('short-secret', [{ approvalSecret: 'x'.repeat(31) }])).toEqual({
      answers: ['TypeError: the approval secret must be at least 32 characters'],
      statements: [],
    })
  })
})

describe('R106: one request at a time per chat, and the open review\'s card is never lost', () => {
  it('R106: twelve concurrent requests on one chat while its review is open: one is answered, the eleven others refused with 409, and the open review\'s card stays in the saved messages', async () => {
    const owner = browser(web.url)
    const chat = randomUUID()
    const { messages } = await planUpToReview(owner, chat)
    const responses = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => answer(await owner.post('/api/chat', { id: chat, messages: answered(messages, { approved: false, reason: `Variant ${i}.` }) }))),
    )
    expect(responses.map(([status]) => status).sort()).toEqual([200, ...Array<number>(11).fill(409)])
    // Refused while the one answered holds the chat's turn, or after it, for lacking the card of the review it opened.
    const refusals = new Set(responses.flatMap(([status, body]) => (status === 409 ? [(body as { error: string }).error] : [])))
    for (const refusal of refusals) expect([TURN_TAKEN, CARD_LOST]).toContain(refusal)
    const review = await openReviewOf(owner, chat)
    expect(review).not.toBeNull()
    expect(cardOf(await savedMessages(owner, chat), review!.callId)?.state).toBe('approval-requested')
  }, 120_000)

  it('R106: a request from a tab that lacks the open review\'s card (opened before the plan) is refused with 409, and the card stays saved', async () => {
    const owner = browser(web.url)
    const chat = randomUUID()
    const { messages, review } = await planUpToReview(owner, chat)
    const stale = [messages[0]!, { id: 'u2', role: 'user', parts: [{ type: 'text', text: 'hello?' }] }]
    expect(await answer(await owner.post('/api/chat', { id: chat, messages: stale }))).toEqual([409, { error: CARD_LOST }])
    expect(cardOf(await savedMessages(owner, chat), review.callId)?.state).toBe('approval-requested')
  })
})


/**
 * The offline model at full speed, made to stall right after the first chunk `stall.after` picks,
 * until its request is aborted (then its stream fails with the abort, as a provider's fetch
 * does): a client can go away mid-answer at a point the test knows.
 */
const stall: { after: (chunk: { type: string; toolName?: string }) => boolean } = { after: () => false }
const stallingModel: LanguageModel = wrapLanguageModel({
  model: offlineChatModel({ section: SECTION, chunkDelayMs: 0, replyDelayMs: 0 }),
  middleware: {
    specificationVersion: 'v3',
    wrapStream: async ({ doStream, params }) => {
      const { stream, ...rest } = await doStream()
      let stalled = false
      const stalling = stream.pipeThrough(
        new TransformStream({
          async transform(chunk, controller) {
            controller.enqueue(chunk)
            if (stalled || !stall.after(chunk as { type: string; toolName?: string })) return
            stalled = true
            const signal = params.abortSignal
            const reason = await new Promise<unknown>((resolve) => {
              if (signal?.aborted) resolve(signal.reason)
              else signal?.addEventListener('abort', () => resolve(signal.reason), { once: true })
            })
            controller.error(reason)
          },
        }),
      )
      return { stream: stalling, ...rest }
    },
  },
})

type Chunk = { type: string; delta?: string; toolCallId?: string; approvalId?: string; errorText?: string }

/**
 * `POST /api/chat` from `who`, read as it streams until `until` picks a chunk; then, once
 * `beforeLeaving` (if given) has settled, the client reading nothing meanwhile, it goes away (its
 * fetch aborted, the connection closed). The chunks it read.
 */
async function leaveMidStream(who: Browser, base: string, body: unknown, until: (chunk: Chunk) => boolean, beforeLeaving?: () => Promise<void>): Promise<Chunk[]> {
  const client = new AbortController()
  const response = await fetch(new URL('/api/chat', base), {
    method: 'POST',
    headers: { origin: new URL(base).origin, 'content-type': 'application/json', ...(who.cookie ? { cookie: who.cookie } : {}) },
    body: JSON.stringify(body),
    signal: client.signal,
  })
  const chunks: Chunk[] = []
  try {
    expect(response.status).toBe(200)
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
    let buffered = ''
    for (;;) {
      const { done, value } = await reader.read()
      if (done) throw new Error(`the stream ended before the chunk awaited; it held ${JSON.stringify(chunks)}`)
      const lines = (buffered + value).split('\n')
      buffered = lines.pop()!
      for (const line of lines) {
        if (!line.startsWith('data: ') || line === 'data: [DONE]') continue
        chunks.push(JSON.parse(line.slice(6)) as Chunk)
        if (!until(chunks.at(-1)!)) continue
        await beforeLeaving?.()
        return chunks
      }
    }
  } finally {
    client.abort()
  }
}

/** Who holds the chat's turn (R106): null once the request that took it gave it back. */
const turnOf = async (chat: string) => (await lite.query<{ turn: string | null }>('SELECT turn FROM web_chats WHERE id = $1', [chat])).rows[0]?.turn

describe('R106: a client that goes away mid-answer', () => {
  let stalling: WebChat
  beforeAll(async () => {
    stalling = await startWebChat({ db: lite, listen: pgliteListen(lite), instance: 'stalling', model: stallingModel })
  })
  afterAll(async () => {
    await stalling?.close()
  })

  it('R106: a client that goes away mid-answer: the answer streamed until then is saved with the request\'s messages, in the statement that gives the turn back', async () => {
    stall.after = (chunk) => chunk.type === 'text-delta'
    const owner = browser(stalling.url)
    const chat = randomUUID()
    await owner.get(`/api/chats/${chat}`) // the page loads the chat (and the browser gets its owner cookie)
    const chunks = await leaveMidStream(owner, stalling.url, { id: chat, messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'what is in the README?' }] }] }, (chunk) => chunk.type === 'text-delta')
    const streamed = chunks.flatMap((chunk) => (chunk.type === 'text-delta' ? [chunk.delta] : [])).join('')
    expect(streamed).not.toBe('')
    const saved = async () => ({
      messages: (await savedMessages(owner, chat)).map((m) => [m.role, m.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('')]),
      turn: await turnOf(chat),
    })
    await expect.poll(saved, { interval: 50 }).toEqual({ messages: [['user', 'what is in the README?'], ['assistant', streamed]], turn: null })
  })

  it('R106: a client that goes away after the review\'s approval request: the card is saved waiting, and the review is answered through it', async () => {
    stall.after = (chunk) => chunk.type === 'tool-call' && chunk.toolName === 'exit_plan_mode'
    const owner = browser(stalling.url)
    const chat = randomUUID()
    const { steered } = (await (await owner.post(`/api/chats/${chat}/command`, { input: 'add a cache' })).json()) as { steered: string }
    const chunks = await leaveMidStream(owner, stalling.url, { id: chat, messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: steered }] }] }, (chunk) => chunk.type === 'tool-approval-request')
    const { toolCallId, approvalId } = chunks.at(-1)!
    let messages: Message[] = []
    await expect
      .poll(async () => {
        messages = await savedMessages(owner, chat)
        const card = cardOf(messages, toolCallId)
        return { card: card && { state: card.state, approvalId: card.approval?.id }, turn: await turnOf(chat) }
      }, { interval: 50 })
      .toEqual({ card: { state: 'approval-requested', approvalId }, turn: null })
    const review = await openReviewOf(owner, chat)
    expect(review?.callId).toBe(toolCallId)
    const text = await (await owner.post('/api/chat', { id: chat, messages: answered(messages, { approved: true }) })).text()
    expect(chunksOf(text).filter((c) => c.type === 'error')).toEqual([])
    expect((await closingRecords(lite, chat, review!.reviewId)).map((e) => e.data.outcome)).toEqual(['approved'])
  })
})

describe('R106: a client that goes away while the answer waits for it to read', () => {
  /**
   * The offline model, whose first text comes as deltas of 256 KiB for as long as the client is
   * there: each made once the one before it has left the model's stream, so the answer fills
   * every buffer between the server and the client (however large the machine's are) and no
   * more: a flood of a fixed size had to be larger than any (16 MiB), all saved and read back.
   */
  let clientGone = false
  const flooding: LanguageModel = wrapLanguageModel({
    model: offlineChatModel({ section: SECTION, chunkDelayMs: 0, replyDelayMs: 0 }),
    middleware: {
      specificationVersion: 'v3',
      wrapStream: async ({ doStream }) => {
        const { stream, ...rest } = await doStream()
        let flooded = false
        const flooding = stream.pipeThrough(
          new TransformStream({
            async transform(chunk, controller) {
              const part = chunk as { type: string; id?: string }
              if (part.type === 'text-delta' && !flooded) {
                flooded = true
                while (!clientGone) {
                  // The last delta still queued: the server is not reading (its writes wait).
                  if ((controller.desiredSize ?? 0) < 0) await new Promise((resolve) => setTimeout(resolve, 5))
                  else controller.enqueue({ type: 'text-delta', id: part.id, delta: 'x'.repeat(1 << 18) } as never)
                }
              }
              controller.enqueue(chunk)
            },
          }),
        )
        return { stream: flooding, ...rest }
      },
    },
  })
  let flooded: WebChat
  /** The server's side of the last `POST /api/chat`. */
  let answering: import('node:http').ServerResponse | undefined
  beforeAll(async () => {
    // A stream whose client stopped reading ends with its turn's lease (R106): a short one, so the
    // test waits 3 s for it, not the default 30.
    flooded = await startWebChat({ db: lite, listen: pgliteListen(lite), instance: 'flooded', model: flooding, turnLeaseMs: 3_000 })
    flooded.server.on('request', (req, res) => void (req.method === 'POST' && req.url === '/api/chat' && (answering = res)))
  })
  afterAll(async () => {
    clientGone = true
    await flooded?.close()
  })

  it('R106: a client that reads the first text of the answer, stops reading until the server\'s writes wait for it, and goes away: the answer streamed until then is saved and the turn given back', async () => {
    const owner = browser(flooded.url)
    const chat = randomUUID()
    await owner.get(`/api/chats/${chat}`) // the page loads the chat (and the browser gets its owner cookie)
    await leaveMidStream(owner, flooded.url, { id: chat, messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'what is in the README?' }] }] }, (chunk) => chunk.type === 'text-delta', async () => {
      // Every buffer between the model and this client is full: the server's response waits to drain.
      await expect.poll(() => answering?.writableNeedDrain, { interval: 20 }).toBe(true)
    })
    clientGone = true
    // The turn is given back in the statement that saves the answer: once it is, the answer is
    // there to read (once: it is megabytes).
    await expect.poll(() => turnOf(chat), { interval: 50 }).toBe(null)
    expect((await savedMessages(owner, chat)).map((m) => m.role)).toEqual(['user', 'assistant'])
  })
})

describe('R106: a request decides on the rows the database holds, whether or not its instance heard of them', () => {
  /** An instance whose listening connection hears no NOTIFY (every hint lost, as while it reconnects). */
  let deaf: WebChat
  beforeAll(async () => {
    const hearsNothing: PgListen = async () => async () => {}
    deaf = await startWebChat({ db: lite, listen: hearsNothing, instance: 'deaf', model: offlineChatModel({ section: SECTION, chunkDelayMs: 0, replyDelayMs: 0 }) })
  })
  afterAll(async () => {
    await deaf?.close()
  })

  it('R106: a review left on another instance, whose NOTIFY this instance never heard: the page\'s next request here, its card settled as left, is answered, not refused', async () => {
    const owner = browser(deaf.url)
    const chat = randomUUID()
    const { messages, review } = await planUpToReview(owner, chat)
    // Another tab of the browser, on the other instance, leaves plan mode through the card.
    const otherTab = webClient(web.url, { cookie: owner.cookie! })
    const left = await answer(await otherTab.post(`/api/chats/${chat}/review`, { reviewId: review.reviewId, decision: 'Leave plan mode' }))
    expect(left[0]).toBe(200)
    const { text } = left[1] as { text: string }
    // The page settles the card as the answer says and sends the chat on; this request lands here.
    const settled = messages.map((m) => ({
      ...m,
      parts: m.parts.map((p) => {
        if (p.toolCallId !== review.callId) return p
        const { approval: _approval, ...rest } = p
        return { ...rest, state: 'output-error', errorText: text }
      }),
    }))
    const [status, body] = await answer(await owner.post('/api/chat', { id: chat, messages: settled }))
    expect([status, typeof body === 'string' ? chunksOf(body).filter((c) => c.type === 'error') : body]).toEqual([200, []])
    expect(cardOf(await savedMessages(owner, chat), review.callId)).toMatchObject({ state: 'output-error', errorText: text })
  })
})

/**
 * A gate on the model's stream: `arm(pick)` makes the next chunk `pick` chooses wait until
 * `release()` (after it is passed on, or before with `before`); `reached` resolves there. The
 * offline model at full speed otherwise.
 */
function gatedModel() {
  type Gate = { pick: (chunk: { type: string; toolName?: string }) => boolean; before: boolean; reached: () => void; released: Promise<void> }
  let armed: Gate | undefined
  const releases: (() => void)[] = []
  const model: LanguageModel = wrapLanguageModel({
    model: offlineChatModel({ section: SECTION, chunkDelayMs: 0, replyDelayMs: 0 }),
    middleware: {
      specificationVersion: 'v3',
      wrapStream: async ({ doStream }) => {
        const { stream, ...rest } = await doStream()
        const held = stream.pipeThrough(
          new TransformStream({
            async transform(chunk, controller) {
              const gate = armed?.pick(chunk as { type: string; toolName?: string }) ? armed : undefined
              if (gate !== undefined) armed = undefined
              if (gate?.before) {
                gate.reached()
                await gate.released
              }
              controller.enqueue(chunk)
              if (gate !== undefined && !gate.before) {
                gate.reached()
                await gate.released
              }
            },
          }),
        )
        return { stream: held, ...rest }
      },
    },
  })
  return {
    model,
    arm(pick: Gate['pick'], { before = false } = {}): { reached: Promise<void>; release: () => void } {
      let release!: () => void
      const released = new Promise<void>((resolve) => (release = resolve))
      releases.push(release)
      let reached!: () => void
      const reachedPromise = new Promise<void>((resolve) => (reached = resolve))
      armed = { pick, before, reached, released }
      return { reached: reachedPromise, release }
    },
    /** Opens every gate (a test that failed midway leaves none shut). */
    releaseAll() {
      armed = undefined
      for (const release of releases.splice(0)) release()
    },
  }
}

/** The `exit_plan_mode` call's chunk. */
const exitCall = (chunk: { type: string; toolName?: string }) => chunk.type === 'tool-call' && chunk.toolName === 'exit_plan_mode'

describe('R106: the card of a review the log holds open stays saved, whatever happens to the turn', () => {
  const gated = gatedModel()
  /** When set, the `turn/end` append of that chat waits (the database is slow for it) until `released`. */
  let holdTurnEnd: { chat: string; seen: () => void; released: Promise<void> } | undefined
  let slow: WebChat
  /** An instance whose turn lease is 300 ms (R106's `turnLeaseMs`), so a test waits out a lease quickly. */
  let quick: WebChat
  beforeAll(async () => {
    const db: PgQueryable = {
      async query(text, params) {
        const hold = holdTurnEnd
        if (hold !== undefined && text.includes('append(') && params?.[0] === hold.chat && params[1] === 'turn/end') {
          holdTurnEnd = undefined
          hold.seen()
          await hold.released
        }
        return lite.query(text, params)
      },
      exec: (sql) => lite.exec(sql),
    }
    slow = await startWebChat({ db, listen: pgliteListen(lite), instance: 'slow', model: gated.model })
    quick = await startWebChat({ db, listen: pgliteListen(lite), instance: 'quick', model: gated.model, turnLeaseMs: 300 })
  })
  afterAll(async () => {
    gated.releaseAll()
    await slow?.close()
    await quick?.close()
  })

  /** `/plan <task>` in a new chat of `who`: the user message the page then sends. */
  const planned = async (who: Browser, chat: string) => {
    const { steered } = (await (await who.post(`/api/chats/${chat}/command`, { input: 'add a cache' })).json()) as { steered: string }
    return { id: 'u1', role: 'user', parts: [{ type: 'text', text: steered }] }
  }

  it('R106: a tab closed as the response ends, while its turn/end is logged for longer than the request waits (a lease): the review\'s card is still saved, waiting', async () => {
    const owner = browser(quick.url)
    const chat = randomUUID()
    const first = await planned(owner, chat)
    let seen!: () => void
    const turnEndSeen = new Promise<void>((resolve) => (seen = resolve))
    let releaseTurnEnd!: () => void
    holdTurnEnd = { chat, seen, released: new Promise<void>((resolve) => (releaseTurnEnd = resolve)) }
    try {
      const client = new AbortController()
      const response = await fetch(new URL('/api/chat', quick.url), {
        method: 'POST',
        headers: { origin: new URL(quick.url).origin, cookie: owner.cookie!, 'content-type': 'application/json' },
        body: JSON.stringify({ id: chat, messages: [first] }),
        signal: client.signal,
      })
      const reading = response.text().catch(() => '')
      // The response has ended on the server (its onFinish is logging turn/end), and the tab is closed.
      await turnEndSeen
      client.abort()
      await reading
      // The request waits for its onFinish at most a lease (here 300 ms), then gives the turn back unsaved.
      await expect.poll(() => turnOf(chat), { interval: 50 }).toBeNull()
    } finally {
      releaseTurnEnd()
    }
    const review = await openReviewOf(owner, chat)
    expect(review).not.toBeNull()
    await expect.poll(async () => cardOf(await savedMessages(owner, chat), review!.callId)?.state ?? 'no card saved').toBe('approval-requested')
  }, 120_000)

  it('R106: a tab opened before the plan sends while the response that opened the review waits on the model past its lease, its card saved nowhere: the review is closed as keep planning, approving nothing, the request is answered, and the card saved is that of the plan it presents again', async () => {
    const owner = browser(slow.url)
    const chat = randomUUID()
    const first = await planned(owner, chat)
    const gate = gated.arm(exitCall)
    const one = owner.post('/api/chat', { id: chat, messages: [first] }).then((r) => r.text())
    await gate.reached // the first request holds the turn; its review is open; its answer is not saved yet
    let opened: ReviewState | null = null
    await expect.poll(async () => (opened = await openReviewOf(owner, chat))?.reviewId ?? null).not.toBeNull()
    // The instance stalls past the 30 s lease (a GC pause, renewals that failed): here the lease is made to run out.
    await lite.query("UPDATE web_chats SET turn_until = now() - interval '1 second' WHERE id = $1", [chat])
    const stale = [first, { id: 'u2', role: 'user', parts: [{ type: 'text', text: 'also, what is in the README?' }] }]
    const [status, body] = await answer(await owner.post('/api/chat', { id: chat, messages: stale }))
    const two = [status, status === 200 ? 'answered' : body]
    gate.release()
    await one
    const review = await openReviewOf(owner, chat)
    expect({
      two,
      closed: (await closingRecords(lite, chat, opened!.reviewId)).map((e) => e.data.outcome),
      again: review !== null && review.reviewId !== opened!.reviewId,
      card: cardOf(await savedMessages(owner, chat), review?.callId)?.state,
    }).toEqual({ two: [200, 'answered'], closed: ['keep-planning'], again: true, card: 'approval-requested' })
  })

  it('R106: a request that took an expired turn before the review opened never replaces the saved card of that open review with messages lacking it', async () => {
    const owner = browser(slow.url)
    const chat = randomUUID()
    const first = await planned(owner, chat)
    // The first request stops on the model just before it presents the plan, holding the turn.
    const beforeExit = gated.arm(exitCall, { before: true })
    const one = owner.post('/api/chat', { id: chat, messages: [first] }).then((r) => r.text())
    await beforeExit.reached
    await lite.query("UPDATE web_chats SET turn_until = now() - interval '1 second' WHERE id = $1", [chat])
    // A second request takes the expired turn (no review is open yet) and stops on the model's first chunk.
    const onModel = gated.arm(() => true, { before: true })
    const two = owner.post('/api/chat', { id: chat, messages: [first, { id: 'u2', role: 'user', parts: [{ type: 'text', text: 'also, what is in the README?' }] }] }).then((r) => r.text())
    await onModel.reached
    // The first request presents its plan, the review opens, and the first request ends.
    beforeExit.release()
    await one
    const review = await openReviewOf(owner, chat)
    expect(review).not.toBeNull()
    // The second request runs on and ends, saving what it answered (no card of that review).
    onModel.release()
    await two
    expect({ open: (await openReviewOf(owner, chat))?.reviewId, card: cardOf(await savedMessages(owner, chat), review!.callId)?.state }).toEqual({
      open: review!.reviewId,
      card: 'approval-requested',
    })
  })
})

describe('R103, R104: other pages cannot churn an instance\'s open sessions', () => {
  const gated = gatedModel()
  /**
   * An instance that keeps 3 sessions open (R179): the requests below open more chats than that, as
   * 500 and more would on an instance of the default bound, at a hundredth of the requests.
   */
  const MAX_SESSIONS = 3
  const OTHER_CHATS = 4 * MAX_SESSIONS
  let busy: WebChat
  beforeAll(async () => {
    busy = await startWebChat({ db: lite, listen: pgliteListen(lite), instance: 'busy', model: gated.model, maxSessions: MAX_SESSIONS })
  })
  afterAll(async () => {
    gated.releaseAll()
    await busy?.close()
  })

  /** `/plan <task>` in a new chat, then the chat sent on, held just before the model presents its plan. */
  async function streamingUpToExit(who: Browser, chat: string) {
    const { steered } = (await (await who.post(`/api/chats/${chat}/command`, { input: 'add a cache' })).json()) as { steered: string }
    const gate = gated.arm(exitCall, { before: true })
    const text = who.post('/api/chat', { id: chat, messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: steered }] }] }).then((r) => r.text())
    await gate.reached
    return { release: gate.release, text }
  }
  /** The errors a UI message stream carried. */
  const errorsIn = (text: string) => chunksOf(text).flatMap((chunk) => (chunk.type === 'error' || chunk.type === 'tool-output-error' ? [chunk.errorText] : []))

  it('R103, R179: cookie-less GETs of the state and messages of more made-up chats than the instance keeps sessions open (another site\'s <img> tags) each answer 404 no such chat, create no chat, and leave a chat streaming on the instance unharmed', async () => {
    const owner = browser(busy.url)
    const chat = randomUUID()
    const streaming = await streamingUpToExit(owner, chat)
    const tag = chat.slice(0, 8)
    const answers = new Map<string, number>()
    for (let i = 0; i < OTHER_CHATS; i++) {
      for (const path of [`/api/chats/junk${i}-${tag}/state`, `/api/chats/junk${i}-${tag}`]) {
        const [status, body] = await answer(await fetch(new URL(path, busy.url)))
        const key = `${status} ${JSON.stringify(body)}`
        answers.set(key, (answers.get(key) ?? 0) + 1)
      }
    }
    streaming.release()
    const errors = errorsIn(await streaming.text)
    const { rows } = await lite.query<{ n: number }>('SELECT count(*)::int AS n FROM web_chats WHERE id LIKE $1', [`junk%-${tag}`])
    expect({ answers: Object.fromEntries(answers), created: rows[0]!.n, errors, review: (await openReviewOf(owner, chat)) !== null }).toEqual({
      answers: { [`404 ${JSON.stringify(NO_CHAT)}`]: 2 * OTHER_CHATS },
      created: 0,
      errors: [],
      review: true,
    })
  }, 120_000)

  it('R104, R179: an instance following as many chats as it keeps open never closes the session of a chat a request is streaming: the owner opening four times as many other chats leaves that answer whole', async () => {
    const owner = browser(busy.url)
    const chat = randomUUID()
    const streaming = await streamingUpToExit(owner, chat)
    // Each other chat of the owner is opened on this instance (a review answer that names no open review: 409).
    const statuses = new Set<number>()
    for (let i = 0; i < OTHER_CHATS; i++) statuses.add((await owner.post(`/api/chats/other${i}-${chat.slice(0, 8)}/review`, { reviewId: 'none', decision: 'Leave plan mode' })).status)
    streaming.release()
    const errors = errorsIn(await streaming.text)
    expect({ statuses: [...statuses], errors, review: (await openReviewOf(owner, chat)) !== null }).toEqual({ statuses: [409], errors: [], review: true })
  }, 120_000)
})

describe('#23 fresh-eyes review: the web chat\'s gate', () => {
  it('R106: an open review whose card no saved copy and no tab holds (the request that opened it died before saving) does not refuse the chat for good: the next request closes it as keep planning, approving nothing, and the model presents the plan again', async () => {
    const owner = browser(web.url)
    const chat = randomUUID()
    const { messages, review } = await planUpToReview(owner, chat)
    const user = messages[0]!
    // The response that opened the review never saved its messages (its instance died, or the save failed).
    await lite.query('UPDATE web_chats SET messages = $2::json WHERE id = $1', [chat, JSON.stringify([user])])
    const [status] = await answer(await owner.post('/api/chat', { id: chat, messages: [user] }))
    expect(status).toBe(200)
    expect((await closingRecords(lite, chat, review.reviewId)).map((e) => e.data)).toEqual([
      { outcome: 'keep-planning', reviewId: review.reviewId, title: expect.any(String), plan: review.plan, toldInResult: true },
    ])
    const again = await openReviewOf(owner, chat)
    expect({ again: again !== null && again.reviewId !== review.reviewId, card: cardOf(await savedMessages(owner, chat), again?.callId)?.state }).toEqual({
      again: true,
      card: 'approval-requested',
    })
  })

  it('R104: a body refused 400 or 415 (messages that are not UI messages, a /plan input or a reviewId that is not a string, a text/plain /plan) creates no chat', async () => {
    const owner = browser(web.url)
    const tag = randomUUID()
    const [chatId, commandId, reviewId, plainId] = ['chat', 'command', 'review', 'plain'].map((route) => `${route}-${tag}`)
    const answers = [
      await answer(await owner.post('/api/chat', { id: chatId, messages: 'nope' })),
      await answer(await owner.post(`/api/chats/${commandId}/command`, { input: 42 })),
      await answer(await owner.post(`/api/chats/${reviewId}/review`, { reviewId: 7 })),
      await answer(await owner.send(`/api/chats/${plainId}/command`, { method: 'POST', body: '{"input":"add a cache"}', headers: { 'content-type': 'text/plain' } })),
    ]
    const { rows } = await lite.query<{ n: number }>('SELECT count(*)::int AS n FROM web_chats WHERE id LIKE $1', [`%-${tag}`])
    expect({ answers, created: rows[0]!.n }).toEqual({
      answers: [
        [400, { error: 'messages must be an array of AI SDK UI messages ({ id, role, parts })' }],
        [400, { error: 'input must be a string' }],
        [400, { error: "reviewId must be the open review's id (a string)" }],
        [415, { error: 'the body must be JSON (content-type: application/json)' }],
      ],
      created: 0,
    })
  })

  it('R103: a chat saved before chats had owners is claimed by a POST only: a cookie-less GET of it answers 404 no such chat and claims nothing, and the user\'s POST then claims it', async () => {
    const chat = randomUUID()
    await lite.query("INSERT INTO web_chats (id, messages, owner) VALUES ($1, '[]'::json, NULL)", [chat])
    const gets = []
    for (const path of [`/api/chats/${chat}`, `/api/chats/${chat}/state`]) gets.push(await answer(await fetch(new URL(path, web.url))))
    const ownerAfterGets = (await lite.query<{ owner: string | null }>('SELECT owner FROM web_chats WHERE id = $1', [chat])).rows[0]?.owner
    const user = browser(web.url)
    const posted = (await user.post(`/api/chats/${chat}/command`, { input: 'add a cache' })).status
    const read = (await user.get(`/api/chats/${chat}/state`)).status
    expect({ gets, ownerAfterGets, posted, read }).toEqual({ gets: [[404, NO_CHAT], [404, NO_CHAT]], ownerAfterGets: null, posted: 200, read: 200 })
  })

  it('R103: the known limit R103 states: a server on another port can have this server sign an owner id for itself (GET /), plant it in the browser, and then read and answer the chats that browser creates', async () => {
    // The other server's fetch: no cookie, so this server answers with a new signed one.
    const [set] = (await fetch(new URL('/', web.url))).headers.getSetCookie()
    const planted = set!.split(';')[0]!
    expect(ownerIdOf(planted)).toBeDefined()
    const victim = webClient(web.url, { cookie: planted }) // the browser, once the other port's page set it
    const chat = randomUUID()
    expect((await victim.post(`/api/chats/${chat}/command`, { input: 'add a cache' })).status).toBe(200)
    const other = webClient(web.url, { cookie: planted })
    const state = await other.get(`/api/chats/${chat}/state`)
    expect([state.status, ((await state.json()) as { mode: { active: boolean } }).mode.active]).toEqual([200, true])
  })

  it('R106: a turnLeaseMs that is not a whole number of milliseconds from 100 to 2147483647: startWebChat rejects with a TypeError before it touches the database', async () => {
    const given = [0, 99, 1.5, Number.NaN, 2 ** 31, '300' as unknown as number].map((turnLeaseMs) => ({ turnLeaseMs }))
    expect(await startsWith('lease', given)).toEqual({
      answers: Array(6).fill('TypeError: turnLeaseMs must be a whole number of milliseconds from 100 to 2147483647'),
      statements: [],
    })
  })
})

describe('R179: how many chats\' sessions an instance keeps open', () => {
  it('R179: a maxSessions that is not a whole number from 1 to 500: startWebChat rejects with a TypeError before it touches the database; the default is 500', async () => {
    const given = [0, 501, 1.5, Number.NaN, -1, '5' as unknown as number].map((maxSessions) => ({ maxSessions }))
    expect({ ...(await startsWith('bound', given)), byDefault: DEFAULT_MAX_SESSIONS }).toEqual({
      answers: Array(6).fill('TypeError: maxSessions must be a whole number from 1 to 500'),
      statements: [],
      byDefault: 500,
    })
  })

  it('R179: past maxSessions the least recently used session is closed and opened again from the database when its chat comes back; within it none is', async () => {
    /** The chats whose session the instance opened (read from the database), in order. */
    const opened: string[] = []
    const watched: PgQueryable = {
      query: (text, params) => (/LEFT JOIN web_checkpoints c ON c\.session = \$1/.test(text) && opened.push(String(params?.[0])), lite.query(text, params)),
      exec: (sql) => lite.exec(sql),
    }
    const visits = async (maxSessions: number | undefined) => {
      opened.length = 0
      const instance = await startWebChat({ db: watched, listen: pgliteListen(lite), instance: `bound${maxSessions}`, model: offlineChatModel({ section: SECTION, chunkDelayMs: 0, replyDelayMs: 0 }), ...(maxSessions ? { maxSessions } : {}) })
      try {
        const owner = browser(instance.url)
        const tag = randomUUID().slice(0, 8)
        // A review answer that names no open review (409) opens the chat's session, and writes nothing.
        for (const chat of ['a', 'b', 'a', 'c', 'a', 'b']) await (await owner.post(`/api/chats/${chat}-${tag}/review`, { reviewId: 'none', decision: 'Leave plan mode' })).text()
        return opened.map((id) => id.split('-')[0])
      } finally {
        await instance.close()
      }
    }
    // Two open at most: c's opening closes b (a was used since), so b comes back from the database.
    expect({ two: await visits(2), byDefault: await visits(undefined) }).toEqual({ two: ['a', 'b', 'c', 'b'], byDefault: ['a', 'b', 'c'] })
  })
})

describe('R106: with a model that gives every call of a tool the same id, the open review\'s card is told from earlier cards of that id', () => {
  const gated = gatedModel()
  let reusing: WebChat
  beforeAll(async () => {
    reusing = await startWebChat({ db: lite, listen: pgliteListen(lite), instance: 'reusing', model: oneCallIdPerTool(gated.model) })
  })
  afterAll(async () => {
    gated.releaseAll()
    await reusing?.close()
  })

  /** Whether the saved messages hold a card of `callId` waiting for the user. */
  const holdsWaitingCard = async (who: Browser, chat: string, callId: string) =>
    (await savedMessages(who, chat)).some((m) => m.parts.some((p) => p.type === 'tool-exit_plan_mode' && p.toolCallId === callId && p.state === 'approval-requested'))

  it('R106, R82: an earlier, settled card of the id the open review\'s call reuses is not that review\'s card: neither a save after a lost turn nor a save lacking the open card drops it', async () => {
    const owner = browser(reusing.url)
    const chat = randomUUID()
    const first = await planUpToReview(owner, chat)
    // The first review is closed by /plan off; the user plans again: the next plan's call has the same id.
    expect((await owner.post(`/api/chats/${chat}/command`, { input: 'off' })).status).toBe(200)
    const { steered } = (await (await owner.post(`/api/chats/${chat}/command`, { input: 'drop the cache' })).json()) as { steered: string }
    const asked = [...first.messages, { id: 'u2', role: 'user', parts: [{ type: 'text', text: steered }] }]
    // Request one stops just before the model presents its plan, holding the turn; its lease runs out.
    const beforeExit = gated.arm(exitCall, { before: true })
    const one = owner.post('/api/chat', { id: chat, messages: asked }).then((r) => r.text())
    await beforeExit.reached
    await lite.query("UPDATE web_chats SET turn_until = now() - interval '1 second' WHERE id = $1", [chat])
    // Request two takes the turn (no review is open), saves its messages (the settled first card among them) and waits on the model.
    const onModel = gated.arm(() => true, { before: true })
    const client = new AbortController()
    const two = fetch(new URL('/api/chat', reusing.url), {
      method: 'POST',
      headers: { origin: new URL(reusing.url).origin, cookie: owner.cookie!, 'content-type': 'application/json' },
      body: JSON.stringify({ id: chat, messages: [...asked, { id: 'u3', role: 'user', parts: [{ type: 'text', text: 'also, what is in the README?' }] }] }),
      signal: client.signal,
    }).then((r) => r.text()).catch(() => '')
    try {
      await onModel.reached
      beforeExit.release()
      await one
      const review = await openReviewOf(owner, chat)
      expect(review?.callId).toBe(first.review.callId) // the same id, a new review
      expect(review?.reviewId).not.toBe(first.review.reviewId)
      const afterLostTurn = await holdsWaitingCard(owner, chat, review!.callId!)
      // Request two's tab goes away: its answer ends, and its messages (no card of the open review) are saved as its turn ends.
      client.abort()
      onModel.release()
      await two
      await expect.poll(() => turnOf(chat)).toBeNull()
      expect({ afterLostTurn, afterSave: await holdsWaitingCard(owner, chat, review!.callId!), open: (await openReviewOf(owner, chat))?.reviewId }).toEqual({
        afterLostTurn: true,
        afterSave: true,
        open: review!.reviewId,
      })
    } finally {
      client.abort()
      gated.releaseAll()
      await Promise.all([one, two])
    }
  })
})

it('POST /api/chart/layout answers the chart\'s elkjs layouts for the page\'s label widths, and a 400 naming the label for widths that miss one', async () => {
  const client = webClient(web.url)
  const definition = (await (await client.get('/api/chart')).json()) as StateNodeDefinition
  const widths: { state: Record<string, number>; edge: Record<string, number> } = { state: {}, edge: {} }
  for (const [kind, text] of labelsOf(chartModel(definition))) widths[kind][text] = text.length * 7
  const answer = await client.post('/api/chart/layout', { widths })
  const { layouts } = (await answer.json()) as { layouts: Record<string, { children?: unknown[] }> }
  expect([answer.status, Object.keys(layouts).sort()]).toEqual([200, ['wrap:intent', 'wrap:lifecycle', 'wrap:mode', 'wrap:review', 'wrap:turn']])
  expect(Object.values(layouts).every((layout) => layout.children?.length === 1)).toBe(true)
  const refused = await client.post('/api/chart/layout', { widths: { state: {}, edge: widths.edge } })
  expect([refused.status, await refused.json()]).toEqual([400, { error: `widths.state["${chartModel(definition).nodes.get('')!.key}"] must be a width in px (0–2000)` }])
})
