import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'
import { offlineChatModel } from '../apps/shared/offline-model.js'
import { pgliteListen } from '../src/adapters/postgres.js'
import { reviewQuestion } from '../src/plan/review.js'
import { SECTION, startWebChat } from '../apps/web/server.js'
import { usePGlite } from './databases.js'
import { webClient } from './web-client.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
/** The in-process tests' one PGlite (each starting one cost ~1.5 s of CPU): their chats have names of their own. */
const db = usePGlite()

it('npm run web starts the chat on PGlite with the offline model, prints its URL, and serves the plan state', async () => {
  // What `npm run web` runs after building the page (apps/web/main.ts), on a free port.
  const child = spawn(process.execPath, ['--import', './apps/shared/register.mjs', 'apps/web/main.ts'], {
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
      child.once('exit', (code) => reject(new Error(`apps/web/main.ts exited (${code}):\n${output}`)))
    })
    expect(line).toMatch(/^web chat: http:\/\/127\.0\.0\.1:\d+\/  \(model: offline \(a scripted model; no network\); log: PGlite, in memory\)$/)
    const url = /http:\/\/\S+/.exec(line)![0]
    const page = webClient(url) // the page's Origin and owner cookie (R103, R104)
    // A chat nobody has written in yet: its GETs create nothing (R103).
    const unknown = await page.get('/api/chats/first-chat/state')
    expect([unknown.status, await unknown.json()]).toEqual([404, { error: 'no such chat' }])
    const command = await page.post('/api/chats/first-chat/command', { input: '' })
    expect(await command.json()).toEqual({ kind: 'success', text: 'Plan mode on. Use /plan off to leave.' })
    const state = await (await page.get('/api/chats/first-chat/state')).json()
    expect(state).toEqual({
      instance: 'web',
      mode: { active: true },
      review: null,
      versions: [],
      // R101: the review's four options, as the library words them (the card's buttons and tooltips).
      options: reviewQuestion('', 'all').options,
      chart: { value: { mode: { active: 'headerTells' }, turn: 'idle', review: 'idle', intent: 'logged', lifecycle: 'serving' } },
    })
    const refused = await page.get('/api/chats/..%2Fetc/state')
    expect([refused.status, await refused.json()]).toEqual([400, { error: 'a chat id is 1–100 letters, digits, - or _' }])
  } finally {
    child.kill('SIGKILL')
  }
})

it('R100: after Keep planning with comments (POST /api/chats/:id/review), the model\'s next request holds the feedback exactly once, in the exit call\'s result, whether the page answers the card or the next message settles it (R87); one closing record', async () => {
  // In process, on PGlite, with the offline model at full speed: its requests are recorded.
  const lite = db()
  const model = offlineChatModel({ section: SECTION, chunkDelayMs: 0, replyDelayMs: 0 })
  const web = await startWebChat({ db: lite, listen: pgliteListen(lite), instance: 'x', model })
  const page = webClient(web.url) // the page's Origin and owner cookie (R103, R104)
  const post = page.post
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
          messages = ((await (await page.get(`/api/chats/${chat}`)).json()) as { messages: Message[] }).messages
          return messages.some((m) => m.parts.some((p) => p.state === 'approval-requested'))
        })
        .toBe(true)
      const { review } = (await (await page.get(`/api/chats/${chat}/state`)).json()) as { review: { reviewId: string; plan: string } }
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
  }
})

it('R101, R102: Leave plan mode and Approve in a fresh context through POST /api/chats/:id/review: a leave is told once, in the exit call\'s result, and plan mode is left; a fresh approval is recorded fresh: true and the model\'s context starts again from the handoff text, in that request and the ones after it', async () => {
  const lite = db()
  const model = offlineChatModel({ section: SECTION, chunkDelayMs: 0, replyDelayMs: 0 })
  const web = await startWebChat({ db: lite, listen: pgliteListen(lite), instance: 'x', model })
  const page = webClient(web.url) // the page's Origin and owner cookie (R103, R104)
  const post = page.post
  type Part = { type: string; text?: string; state?: string; approval?: { id?: string; approved?: boolean; reason?: string }; toolCallId?: string; input?: { plan?: string } }
  type Message = { id: string; role: string; parts: Part[] }
  type Prompt = (typeof model.doStreamCalls)[number]['prompt']
  const load = async (chat: string) => ((await (await page.get(`/api/chats/${chat}`)).json()) as { messages: Message[] }).messages
  const state = async (chat: string) =>
    (await (await page.get(`/api/chats/${chat}/state`)).json()) as { mode: { active: boolean; pending?: boolean }; review: { reviewId: string; plan: string } | null; versions: { version: number; outcome: string; fresh?: true }[] }
  /** Sends the chat on and waits for the card of the next review. */
  const untilReview = async (chat: string, messages: Message[]) => {
    await (await post('/api/chat', { id: chat, messages })).text()
    let saved: Message[] = []
    await expect.poll(async () => (saved = await load(chat)).some((m) => m.parts.some((p) => p.state === 'approval-requested'))).toBe(true)
    return saved
  }
  /** The card settled as the page settles it after a decision (R87's settlement, made by the page). */
  const settle = (messages: Message[], settled: Record<string, unknown>) =>
    messages.map((m) => ({
      ...m,
      parts: m.parts.map((p) => {
        if (p.state !== 'approval-requested') return p
        const { approval: _approval, ...rest } = p
        return { ...rest, ...settled }
      }),
    }))
  const closingRecords = async (chat: string, reviewId: string) => {
    const { rows } = await lite.query<{ data: Record<string, unknown> }>("SELECT data FROM web_events WHERE session = $1 AND type = 'plan/review' ORDER BY seq", [chat])
    return rows.filter((r) => r.data.reviewId === reviewId && r.data.outcome !== 'requested').map((r) => r.data)
  }
  const modes = async (chat: string) => {
    const { rows } = await lite.query<{ data: { active: boolean } }>("SELECT data FROM web_events WHERE session = $1 AND type = 'plan/mode' ORDER BY seq", [chat])
    return rows.map((r) => r.data.active)
  }
  const textOf = (message: Prompt[number]) => (typeof message.content === 'string' ? message.content : message.content.map((p) => (p.type === 'text' ? p.text : '')).join(''))
  const LEFT = 'The user left plan mode without carrying out the plan; stop here and wait for their message.'
  try {
    // Leave plan mode.
    const { steered } = (await (await post('/api/chats/leaving/command', { input: 'add a cache' })).json()) as { steered: string }
    let messages = await untilReview('leaving', [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: steered }] }])
    const { review } = await state('leaving')
    // The route takes only the two labels, alone; anything else is a 400 and changes nothing.
    const refused = async (body: unknown) => {
      const response = await post('/api/chats/leaving/review', body)
      return [response.status, await response.json()]
    }
    const labels = 'decision must be "Approve in a fresh context" or "Leave plan mode" when given'
    expect(await refused({ reviewId: review!.reviewId, decision: 'Approve' })).toEqual([400, { error: labels }])
    expect(await refused({ reviewId: review!.reviewId, decision: 'leave plan mode' })).toEqual([400, { error: labels }])
    expect(await refused({ reviewId: review!.reviewId, decision: ['Leave plan mode'] })).toEqual([400, { error: labels }])
    expect(await refused({ reviewId: review!.reviewId, decision: 'Leave plan mode', feedback: 'x' })).toEqual([400, { error: 'a decision goes alone: feedback and comments go with Keep planning' }])
    expect(await refused({ reviewId: review!.reviewId, decision: 'Leave plan mode', comments: [] })).toEqual([400, { error: 'a decision goes alone: feedback and comments go with Keep planning' }])
    expect(await closingRecords('leaving', review!.reviewId)).toEqual([])
    const left = await post('/api/chats/leaving/review', { reviewId: review!.reviewId, decision: 'Leave plan mode' })
    expect([left.status, await left.json()]).toEqual([200, { outcome: 'left', text: LEFT }])
    expect(await closingRecords('leaving', review!.reviewId)).toEqual([
      { outcome: 'left', reviewId: review!.reviewId, title: 'Plan: add a cache', plan: review!.plan, toldInResult: true },
    ])
    let before = model.doStreamCalls.length
    await (await post('/api/chat', { id: 'leaving', messages: settle(messages, { state: 'output-error', errorText: LEFT }) })).text()
    const leftPrompt = model.doStreamCalls[before]!.prompt
    expect(JSON.stringify(leftPrompt).split(LEFT).length - 1).toBe(1)
    const exitResults = leftPrompt.flatMap((m) => (m.role === 'tool' ? m.content : [])).filter((p) => p.type === 'tool-result' && p.toolName === 'exit_plan_mode')
    expect(exitResults.map((p) => (p.type === 'tool-result' ? p.output : undefined))).toEqual([{ type: 'error-text', value: LEFT }])
    expect(model.doStreamCalls.length).toBe(before + 1) // the model stops
    expect(JSON.stringify(leftPrompt.find((m) => m.role === 'system'))).not.toContain('plan mode') // the step ran in the default mode
    expect((await state('leaving')).mode).toEqual({ active: false })
    expect(await modes('leaving')).toEqual([true, false])
    expect((await state('leaving')).versions.map((v) => v.outcome)).toEqual(['left'])
    messages = await load('leaving')
    expect(messages.at(-1)!.parts.filter((p) => p.type === 'text').at(-1)!.text).toBe('Understood: plan mode is off and I carry nothing out. I stop here and wait for your message.')

    // Approve in a fresh context, after one keep planning (a decision made while planning).
    const task = (await (await post('/api/chats/fresh/command', { input: 'add a cache' })).json()) as { steered: string }
    messages = await untilReview('fresh', [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: task.steered }] }])
    messages = await untilReview(
      'fresh',
      messages.map((m) => ({
        ...m,
        parts: m.parts.map((p) => (p.state === 'approval-requested' ? { ...p, state: 'approval-responded', approval: { ...p.approval, approved: false, reason: 'Use SQLite.' } } : p)),
      })),
    )
    const v2 = (await state('fresh')).review!
    expect(v2.plan).toContain('(revision 2)')
    const approved = await post('/api/chats/fresh/review', { reviewId: v2.reviewId, decision: 'Approve in a fresh context' })
    expect([approved.status, await approved.json()]).toEqual([200, { outcome: 'approved', fresh: true }])
    expect(await closingRecords('fresh', v2.reviewId)).toEqual([
      { outcome: 'approved', reviewId: v2.reviewId, title: 'Plan: add a cache (revision 2)', plan: v2.plan, fresh: true, toldInResult: true },
    ])
    const handoff = [
      'The user approved this plan (v2) to be carried out in a fresh context: the conversation that produced it was set aside. Carry it out, starting now.',
      'Decisions made while planning:\n- v1: Use SQLite.',
      `The plan:\n\n${v2.plan}`,
    ].join('\n\n')
    before = model.doStreamCalls.length
    await (await post('/api/chat', { id: 'fresh', messages: settle(messages, { state: 'output-available', output: { approved: true } }) })).text()
    const calls = model.doStreamCalls.slice(before)
    expect(calls.length).toBe(2) // it carries the plan out in two steps
    for (const { prompt } of calls) {
      const [first, ...rest] = prompt.filter((m) => m.role !== 'system')
      // Every step of the request starts with the fresh context's first message; nothing of the planning is left.
      expect([first!.role, textOf(first!)]).toEqual(['user', handoff])
      expect(rest.some((m) => m.role === 'user')).toBe(false)
      expect(JSON.stringify(rest)).not.toContain('exit_plan_mode')
    }
    expect((await state('fresh')).mode).toEqual({ active: false })
    expect((await state('fresh')).versions.map(({ version, outcome, fresh }) => ({ version, outcome, ...(fresh ? { fresh } : {}) }))).toEqual([
      { version: 1, outcome: 'keep-planning' },
      { version: 2, outcome: 'approved', fresh: true },
    ])
    messages = await load('fresh')
    expect(JSON.stringify(messages)).toContain('Done with \\"Plan: add a cache (revision 2)\\"')
    // The saved messages keep the whole conversation for display …
    expect(messages[0]!.parts[0]!.text).toBe(task.steered)
    expect(messages.some((m) => m.parts.some((p) => p.type === 'tool-exit_plan_mode'))).toBe(true)
    // … while the model's next request starts from the fresh context: the handoff, what followed, the new message.
    before = model.doStreamCalls.length
    await (await post('/api/chat', { id: 'fresh', messages: [...messages, { id: 'u9', role: 'user', parts: [{ type: 'text', text: 'What is next?' }] }] })).text()
    const next = model.doStreamCalls[before]!.prompt.filter((m) => m.role !== 'system')
    expect(next.filter((m) => m.role === 'user').map(textOf)).toEqual([handoff, 'What is next?'])
    expect(textOf(next[0]!)).toBe(handoff)
    expect(JSON.stringify(next)).not.toContain('exit_plan_mode')
    expect(JSON.stringify(next)).toContain('list_files') // the fresh context's own step is kept
    expect(JSON.stringify(next).split('Approved in a fresh context. Carrying out').length - 1).toBe(1)
  } finally {
    await web.close()
  }
})
