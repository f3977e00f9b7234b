import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { PGlite } from '@electric-sql/pglite'
import { expect, it } from 'vitest'
import { offlineChatModel } from '../cli/offline-model.js'
import { pgliteListen } from '../src/adapters/postgres.js'
import { SECTION, startWebChat } from '../web/server.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

it('npm run web starts the chat on PGlite with the offline model, prints its URL, and serves the plan state', async () => {
  // What `npm run web` runs after building the page (web/main.ts), on a free port.
  const child = spawn(process.execPath, ['--import', './visualizer/register.mjs', 'web/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', DATABASE_URL: '', OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '', AI_GATEWAY_API_KEY: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  try {
    const line = await new Promise<string>((resolve, reject) => {
      let output = ''
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        output += chunk
        if (output.includes('\n')) resolve(output.split('\n')[0]!)
      })
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
      child.once('exit', (code) => reject(new Error(`web/main.ts exited (${code}):\n${output}`)))
    })
    expect(line).toMatch(/^web chat: http:\/\/127\.0\.0\.1:\d+\/  \(model: offline \(a scripted model; no network\); log: PGlite, in memory\)$/)
    const url = /http:\/\/\S+/.exec(line)![0]
    const state = await (await fetch(new URL('/api/chats/first-chat/state', url))).json()
    expect(state).toEqual({
      instance: 'web',
      mode: { active: false },
      review: null,
      versions: [],
      chart: { value: { mode: 'inactive', turn: 'idle', review: 'idle', intent: 'logged', lifecycle: 'serving' } },
    })
    const command = await fetch(new URL('/api/chats/first-chat/command', url), { method: 'POST', body: JSON.stringify({ input: '' }) })
    expect(await command.json()).toEqual({ kind: 'success', text: 'Plan mode on. Use /plan off to leave.' })
    expect((await (await fetch(new URL('/api/chats/first-chat/state', url))).json()).mode).toEqual({ active: true })
    const refused = await fetch(new URL('/api/chats/..%2Fetc/state', url))
    expect([refused.status, await refused.json()]).toEqual([400, { error: 'a chat id is 1–100 letters, digits, - or _' }])
  } finally {
    child.kill('SIGKILL')
  }
}, 60_000)

it('R100: after Keep planning with comments (POST /api/chats/:id/review), the model\'s next request holds the feedback exactly once, in the exit call\'s result, whether the page answers the card or the next message settles it (R87); one closing record', async () => {
  // In process, on PGlite, with the offline model at full speed: its requests are recorded.
  const lite = new PGlite()
  await lite.waitReady
  const model = offlineChatModel({ section: SECTION, chunkDelayMs: 0, replyDelayMs: 0 })
  const web = await startWebChat({ db: lite, listen: pgliteListen(lite), instance: 'x', model })
  const post = (path: string, body: unknown) =>
    fetch(new URL(path, web.url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  type Part = { type: string; text?: string; state?: string; approval?: { id?: string; approved?: boolean; reason?: string }; toolCallId?: string }
  type Message = { id: string; role: string; parts: Part[] }
  const quote = 'Add or update the tests that cover it.'
  try {
    for (const pageAnswersCard of [true, false]) {
      const chat = pageAnswersCard ? 'answered-by-page' : 'settled-by-next-message'
      const { steered } = (await (await post(`/api/chats/${chat}/command`, { input: 'add a cache' })).json()) as { steered: string }
      await (await post('/api/chat', { id: chat, messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: steered }] }] })).text()
      let messages: Message[] = []
      await expect
        .poll(async () => {
          messages = ((await (await fetch(new URL(`/api/chats/${chat}`, web.url))).json()) as { messages: Message[] }).messages
          return messages.some((m) => m.parts.some((p) => p.state === 'approval-requested'))
        })
        .toBe(true)
      const { review } = (await (await fetch(new URL(`/api/chats/${chat}/state`, web.url))).json()) as { review: { reviewId: string; plan: string } }
      expect(review.plan).toContain(quote)
      const answered = await post(`/api/chats/${chat}/review`, { reviewId: review.reviewId, feedback: 'Keep it small.', comments: [{ quote, text: 'Cover eviction.' }] })
      const feedback = `Keep it small.\n\nComments on the plan:\n1. On ${JSON.stringify(quote)}: Cover eviction.`
      expect([answered.status, await answered.json()]).toEqual([200, { outcome: 'keep-planning', feedback }])
      messages = pageAnswersCard
        ? // What the page does: the card answered with the recorded feedback as the denial's reason.
          messages.map((m) => ({
            ...m,
            parts: m.parts.map((p) => (p.state === 'approval-requested' ? { ...p, state: 'approval-responded', approval: { ...p.approval, approved: false, reason: feedback } } : p)),
          }))
        : // The tab was gone before it answered the card: the next message of any tab brings it unanswered.
          [...messages, { id: 'u2', role: 'user', parts: [{ type: 'text', text: 'go on' }] }]
      const before = model.doStreamCalls.length
      await (await post('/api/chat', { id: chat, messages })).text()
      const prompt = model.doStreamCalls[before]!.prompt
      const told = JSON.stringify(prompt).split(JSON.stringify(feedback).slice(1, -1)).length - 1
      expect(told).toBe(1)
      const exitResults = prompt.flatMap((m) => (m.role === 'tool' ? m.content : [])).filter((p) => p.type === 'tool-result' && p.toolName === 'exit_plan_mode')
      expect(exitResults.map((p) => (p.type === 'tool-result' ? p.output : undefined))).toEqual([
        { type: 'error-text', value: `The user chose to keep planning; their feedback: ${feedback}` },
      ])
      const { rows } = await lite.query<{ data: Record<string, unknown> }>("SELECT data FROM web_events WHERE session = $1 AND type = 'plan/review' ORDER BY seq", [chat])
      const closing = rows.filter((r) => r.data.reviewId === review.reviewId && r.data.outcome !== 'requested').map((r) => r.data)
      expect(closing).toEqual([expect.objectContaining({ outcome: 'keep-planning', feedback, comments: [{ quote, text: 'Cover eviction.' }], toldInResult: true })])
    }
  } finally {
    await web.close()
    await lite.close()
  }
}, 60_000)
