import { describe, expect, it } from 'vitest'
import { planProjection } from '../src/index.js'
import { ARTIFACTS, eventually, modes, openCard, type, useWebChat } from './fixtures/web-chat.js'

/**
 * The web chat across instances and tabs, in Chromium (test/fixtures/web-chat.ts): a `/plan off`
 * typed while the answer streams, a reload with the review open, two tabs switching at once, the
 * card's other decisions, an instance killed before the user answers. test/web-chat.test.ts has
 * the page's own scenarios.
 */
const LEAVING_NOTE = '/plan off Leaving plan mode (applies from the next step).'
const STOPS_PLANNING = 'You switched back to the default mode, so I stop planning'

const web = useWebChat()

describe('the web chat (AI SDK UI) across two instances and two tabs, in Chromium', () => {
  it('/plan off typed while the answer streams applies at the next step of that same turn; a reload shows the same state, open review included', async () => {
    const { page, chat, errors } = await web.open()
    // The turn's second reply is held at the gate: its first step (it lists the files) has streamed.
    const secondReply = web.holdReply(2)
    await type(page, '/plan tidy the logging')
    const held = await secondReply
    // /plan off goes in now, to the instance that is not streaming the turn (R86 carries it over).
    await page.getByTestId('tool-call').first().waitFor()
    expect(await page.getByTestId('status').textContent()).toBe('answering…')
    const other = held.instance === 'A' ? 'B' : 'A'
    web.cluster.route((path) => (path.endsWith('/command') ? other : undefined))
    await type(page, '/plan off')
    await expect.poll(() => page.getByTestId('command-note').nth(1).textContent()).toBe(LEAVING_NOTE)
    web.cluster.route(undefined)
    held.release()
    expect(web.cluster.served.filter((s) => s.path.endsWith('/command')).at(-1)!.instance).toBe(other)
    await expect.poll(() => page.getByTestId('messages').textContent()).toContain(STOPS_PLANNING)
    await eventually(() => page.getByTestId('status').textContent(), 'ready')
    // No review waits: under load the leave may be pending already when the model presents its
    // plan, and the call is then refused (R42: E is not plan mode), its card showing the refusal.
    expect(await openCard(page).count()).toBe(0)
    expect(await page.locator('[data-testid=plan-card]:not([data-state=output-error])').count()).toBe(0)
    // The badge follows the chat's state, which the page polls: it may trail the stream's end.
    await expect.poll(() => page.getByTestId('mode').textContent()).toBe('default')
    // In the log: the leave is flushed between two steps of the one turn that /plan opened.
    const log = await web.logOf(chat)
    const turn = log.slice(log.findIndex((e) => e.type === 'turn/start'))
    const end = turn.findIndex((e) => e.type === 'turn/end')
    const flip = turn.findIndex((e) => e.type === 'plan/mode' && e.data.active === false)
    expect(flip).toBeGreaterThan(turn.findIndex((e) => e.type === 'request/header'))
    expect(flip).toBeLessThan(end)
    expect(turn.slice(flip + 1, end).some((e) => e.type === 'request/header')).toBe(true)

    // Plan again, up to the review; a reload (served by whichever instance) shows it still open.
    await type(page, '/plan tidy the logging')
    await openCard(page).waitFor()
    await page.reload()
    await openCard(page).waitFor()
    expect(await openCard(page).locator('h1').textContent()).toBe('Plan: tidy the logging')
    await expect.poll(() => page.getByTestId('mode').getAttribute('data-mode')).toBe('plan')
    await eventually(() => page.getByTestId('version').count(), 1)
    await openCard(page).getByTestId('approve').click()
    await expect.poll(() => page.getByTestId('messages').textContent()).toContain('Done with "Plan: tidy the logging"')
    expect(errors).toEqual([])
    await web.leave(page)
  })

  it('two tabs on one chat switching at once leave one consistent log (no repeated plan/mode) and show the same mode', async () => {
    const first = await web.open()
    const second = await web.open(first.chat, { newTab: true }) // another tab of the same browser
    const inputs = ['/plan', '/plan off', '/plan', '/plan off', '/plan']
    await Promise.all(
      [first.page, second.page].map(async (page) => {
        for (const input of inputs) await type(page, input)
      }),
    )
    await expect.poll(() => first.page.getByTestId('command-note').count()).toBe(inputs.length)
    await expect.poll(() => second.page.getByTestId('command-note').count()).toBe(inputs.length)
    const log = await web.logOf(first.chat)
    const flips = modes(log)
    expect(flips.every((active, i) => i === 0 || active !== flips[i - 1])).toBe(true)
    // What the page must show is the log's own reading (R58): its last switch, and a selection
    // still waiting when a `/plan` answered on a view the other instance had just changed was
    // logged after that switch (R86: the later selection wins; nobody is in a turn to flush it).
    const view = planProjection.view(log.reduce((state, event, seq) => planProjection.apply(state, { seq, ...event }), planProjection.init()))
    const shown = (view.active ? 'plan' : 'default') + (view.pending ? (view.active ? ' · leaving at the next step' : ' · entering at the next step') : '')
    await eventually(() => first.page.getByTestId('mode').textContent(), shown)
    await eventually(() => second.page.getByTestId('mode').textContent(), shown)
    expect([...first.errors, ...second.errors]).toEqual([])
    await web.leave(first.page)
    await web.leave(second.page)
  })

  it('R101, R102, R117: the card offers Approve in a fresh context and Leave plan mode; Leave plan mode records left, leaves plan mode and the model stops; Approve in a fresh context records fresh: true and the plan is carried out in a fresh context', async () => {
    const { page, chat, errors } = await web.open()
    const task = 'add a cache to the importer'
    await type(page, `/plan ${task}`)
    await openCard(page).waitFor()
    const actions = () => openCard(page).locator('.plan-actions button').evaluateAll((buttons) => buttons.map((b) => [b.getAttribute('data-testid'), b.textContent]))
    expect(await actions()).toEqual([
      ['approve', 'Approve'],
      ['approve-fresh', 'Approve in a fresh context'],
      ['keep-planning', 'Keep planning'],
      ['leave', 'Leave plan mode'],
    ])
    // Their tooltips are the library's descriptions (R101), served with the chat's state.
    expect(await openCard(page).getByTestId('leave').getAttribute('title')).toBe('Leave plan mode without carrying out the plan; the model stops and waits.')
    // Comments go with Keep planning only (R100): the other decisions wait while one is listed.
    await openCard(page).getByTestId('plan-body').locator('h1').click()
    await openCard(page).getByTestId('comment-text').fill('Name it.')
    await openCard(page).getByTestId('add-comment').click()
    for (const id of ['approve', 'approve-fresh', 'leave']) expect(await openCard(page).getByTestId(id).isDisabled()).toBe(true)
    await openCard(page).getByTestId('remove-comment').click()
    await openCard(page).screenshot({ path: `${ARTIFACTS}web-chat-decisions-card.png` })
    const reviewOf = async (n: number) => String((await web.logOf(chat)).filter((e) => e.type === 'plan/review' && e.data.outcome === 'requested')[n]!.data.reviewId)
    const closing = async (reviewId: string) =>
      (await web.logOf(chat)).filter((e) => e.type === 'plan/review' && e.data.reviewId === reviewId && e.data.outcome !== 'requested').map((e) => e.data)

    // Leave plan mode: one closing record `left`, told in the exit call's result; plan mode is left at the next step; the model stops.
    const first = await reviewOf(0)
    await openCard(page).getByTestId('leave').click()
    await expect
      .poll(() => page.locator('[data-testid=plan-card][data-state=output-error] [data-testid=plan-outcome]').textContent())
      .toBe('Left plan mode without carrying out the plan')
    await expect.poll(() => page.getByTestId('messages').textContent()).toContain('Understood: plan mode is off and I carry nothing out. I stop here and wait for your message.')
    await eventually(() => page.getByTestId('mode').textContent(), 'default')
    await eventually(() => page.getByTestId('status').textContent(), 'ready')
    expect(await closing(first)).toEqual([expect.objectContaining({ outcome: 'left', reviewId: first, toldInResult: true })])
    expect(modes(await web.logOf(chat))).toEqual([true, false])
    await expect.poll(() => page.getByTestId('version').locator('summary').first().textContent()).toBe('v1 · Plan: add a cache to the importer (left)')

    // Plan again; Approve in a fresh context: recorded fresh, and carried out from the plan handed off (R102).
    await type(page, `/plan ${task}`)
    await openCard(page).waitFor()
    await eventually(() => page.getByTestId('status').textContent(), 'ready')
    const second = await reviewOf(1)
    await openCard(page).getByTestId('approve-fresh').click()
    await expect
      .poll(() => page.getByTestId('messages').textContent())
      .toContain('Approved in a fresh context. Carrying out "Plan: add a cache to the importer", starting where the plan starts.')
    await expect.poll(() => page.getByTestId('messages').textContent()).toContain('Done with "Plan: add a cache to the importer"')
    await eventually(() => page.getByTestId('mode').textContent(), 'default')
    await eventually(() => page.getByTestId('status').textContent(), 'ready')
    await eventually(
      () => page.locator('[data-testid=plan-card][data-state=output-available] [data-testid=plan-outcome]').textContent(),
      'Approved in a fresh context and carried out',
    )
    expect(await closing(second)).toEqual([expect.objectContaining({ outcome: 'approved', reviewId: second, fresh: true, toldInResult: true })])
    const log = await web.logOf(chat)
    expect(modes(log)).toEqual([true, false, true, false])
    expect(log.filter((e) => e.type === 'plan/review').map((e) => e.data.outcome)).toEqual(['requested', 'left', 'requested', 'approved'])
    await expect.poll(() => page.getByTestId('version').locator('summary').first().textContent()).toBe('v1 · Plan: add a cache to the importer (approved, fresh context)')
    // The first card still says how it ended, though its plan is no longer in the current episode's history.
    expect(await page.locator('[data-testid=plan-card][data-state=output-error] [data-testid=plan-outcome]').textContent()).toBe('Left plan mode without carrying out the plan')
    // The model's context starts again from the handoff: the next request holds its text (checked in web-main.test.ts).
    await eventually(() => page.getByTestId('status').textContent(), 'ready')
    const handedOff = async () => String((await web.db.query('SELECT context FROM web_contexts WHERE id = $1', [chat])).rows[0]?.context.text)
    await expect.poll(handedOff).toMatch(/^The user approved this plan \(v1\) to be carried out in a fresh context/)
    expect(await handedOff()).toContain(`The plan:\n\n${String((await web.logOf(chat)).filter((e) => e.type === 'plan/review').at(-1)!.data.plan)}`)
    expect(errors).toEqual([])
    await page.screenshot({ path: `${ARTIFACTS}web-chat-decisions.png`, fullPage: true })
    await web.leave(page)
  })

  it('the instance that served the review is killed before the user answers; the other completes the review and the plan is carried out', async () => {
    const { page, chat, errors } = await web.open()
    await type(page, '/plan rename the config keys')
    await openCard(page).waitFor()
    await eventually(() => page.getByTestId('status').textContent(), 'ready') // the response asking for review has ended
    // ... and its instance has saved the answer and given the chat's turn back (R106): killed before
    // that, the other instance would wait for the turn's lease to run out.
    await eventually(async () => (await web.db.query('SELECT turn FROM web_chats WHERE id = $1', [chat])).rows[0]?.turn ?? null, null)
    const reviewServedBy = web.cluster.served.filter((s) => s.path === '/api/chat').at(-1)!.instance
    await web.cluster.kill(reviewServedBy)
    const from = web.cluster.served.length
    await openCard(page).getByTestId('approve').click()
    await expect.poll(() => page.getByTestId('messages').textContent()).toContain('Done with "Plan: rename the config keys"')
    await expect.poll(() => page.getByTestId('mode').textContent()).toBe('default')
    const after = web.cluster.served.slice(from)
    expect(after.some((s) => s.path === '/api/chat')).toBe(true)
    expect(new Set(after.map((s) => s.instance))).toEqual(new Set([reviewServedBy === 'A' ? 'B' : 'A']))
    const log = await web.logOf(chat)
    expect(log.filter((e) => e.type === 'plan/review').map((e) => e.data.outcome)).toEqual(['requested', 'approved'])
    expect(modes(log)).toEqual([true, false])
    // The proxy answers 502 for what it had routed to the killed instance (the page's polls): no other error.
    expect(errors.filter((error) => !error.startsWith('console: Failed to load resource: the server responded with a status of 502 (Bad Gateway)'))).toEqual([])
    await web.leave(page)
  })
})
