import { describe, expect, it } from 'vitest'
import { createPlanMode, EXIT_PLAN_MODE, type PlanModeOptions, type ReviewAnswer } from '../src/index.js'
import { planModeSettings } from '../src/options.js'
import { APPROVE, createHarness, ENTERING, KEEP_PLANNING, PLAN, SECTION } from './helpers.js'

const DESCRIPTION =
  "Use only in plan mode. Present your plan for the user's review and, on approval, leave plan mode. Send the COMPLETE plan as markdown, starting with a # heading that names it. The user may approve (carry out the plan from your next step) or keep planning — their feedback comes back in the tool result; revise and present again."

/** A harness in plan mode with an open review of PLAN. */
async function reviewing(options: Parameters<typeof createHarness>[0] = {}) {
  const h = createHarness(options)
  await h.planMode.set(h.agent, true)
  h.startTurn()
  await h.step()
  const controller = new AbortController()
  const call = h.planMode.exitTool.execute({ plan: PLAN }, { agent: h.agent, signal: controller.signal })
  const settled = call.then(
    (value) => ({ value }),
    (error: Error) => ({ error: error.message }),
  )
  const request = await h.review.untilAsked(1)
  return { ...h, call, settled, request, controller }
}

const reviewLines = (lines: string[]) => lines.filter((l) => l.startsWith('plan/review'))

describe('§6 configuration', () => {
  it('R37: option errors, first failure wins', () => {
    const bad = (options: unknown) => () => planModeSettings(options as PlanModeOptions)
    expect(bad({})).toThrow(new Error('PlanModeOptions needs a string `section`'))
    expect(bad({ section: 3, extra: 1 })).toThrow(new Error('PlanModeOptions needs a string `section`'))
    expect(bad({ section: ' \n\t', extra: 1 })).toThrow(new Error('PlanModeOptions needs a non-empty `section`'))
    expect(bad({ section: 'x', b: 1, a: 2 })).toThrow(
      new Error('PlanModeOptions has unknown key(s) b, a — options are { section, review?, decisions?, pendingStore?, checkpoints?, limits?, logger?, inspect? }'),
    )
    expect(() => createPlanMode({ section: 'x', tools: [] } as unknown as PlanModeOptions)).toThrow(
      new Error('PlanModeOptions has unknown key(s) tools — options are { section, review?, decisions?, pendingStore?, checkpoints?, limits?, logger?, inspect? }'),
    )
    expect(() => createPlanMode({} as PlanModeOptions)).toThrow(new Error('PlanModeOptions needs a string `section`'))
  })

  it('R38: the resolved settings are a new object; section kept verbatim', () => {
    const options = { section: '  Plan mode.\n' }
    const settings = planModeSettings(options)
    expect(settings).not.toBe(options)
    expect(settings.section).toBe('  Plan mode.\n')
  })
})

describe('§7 exit_plan_mode', () => {
  it('R40: always offered: the tool and its schemas are identical in both states', async () => {
    const h = createHarness()
    const snapshot = () => JSON.stringify([h.planMode.exitTool.name, h.planMode.exitTool.description, h.planMode.exitTool.parameters, h.planMode.exitTool.outputSchema])
    const off = snapshot()
    await h.planMode.set(h.agent, true)
    expect(snapshot()).toBe(off)
    expect(h.planMode.exitTool.name).toBe(EXIT_PLAN_MODE)
    expect(EXIT_PLAN_MODE).toBe('exit_plan_mode')
  })

  it('R41: description, parameter and output schema are exact', () => {
    const { exitTool } = createHarness().planMode
    expect(exitTool.description).toBe(DESCRIPTION)
    expect(exitTool.parameters).toEqual({
      type: 'object',
      properties: {
        plan: { type: 'string', description: 'The complete plan, as markdown, starting with a # heading that names it.' },
      },
      required: ['plan'],
      additionalProperties: false,
    })
    expect(exitTool.outputSchema).toEqual({
      type: 'object',
      properties: { approved: { type: 'boolean', const: true } },
      required: ['approved'],
      additionalProperties: false,
    })
  })

  describe('R42: checks in order, each failing with its exact message and changing nothing', () => {
    it('R42: 1 no agent, 2 plan not a string', async () => {
      const h = createHarness()
      await expect(h.planMode.exitTool.execute({ plan: 1 }, {})).rejects.toThrow(
        new Error('exit_plan_mode requires a calling agent (no session to switch)'),
      )
      await expect(h.planMode.exitTool.execute({ plan: 1 }, { agent: h.agent })).rejects.toThrow(
        new Error('exit_plan_mode requires a "plan" string argument'),
      )
      await expect(h.planMode.exitTool.execute(undefined, { agent: h.agent })).rejects.toThrow(
        'exit_plan_mode requires a "plan" string argument',
      )
    })

    it('R42: 3 E inactive comes before the heading check', async () => {
      const h = createHarness()
      await expect(h.planMode.exitTool.execute({ plan: 'no heading' }, { agent: h.agent })).rejects.toThrow(
        new Error('exit_plan_mode is only available in plan mode'),
      )
      // E, not F: a pending entry counts as plan mode; a pending leave does not.
      h.startTurn()
      await h.planMode.set(h.agent, true)
      await expect(h.planMode.exitTool.execute({ plan: 'x' }, { agent: h.agent })).rejects.toThrow(
        'exit_plan_mode requires a non-empty markdown plan starting with a # heading',
      )
      await h.step()
      await h.planMode.set(h.agent, false)
      await expect(h.planMode.exitTool.execute({ plan: PLAN }, { agent: h.agent })).rejects.toThrow(
        'exit_plan_mode is only available in plan mode',
      )
      expect(h.review.requests).toHaveLength(0)
    })

    it('R42: 3 after an approval in the same step, a second call fails instead of asking again', async () => {
      const r = await reviewing()
      r.review.answer(APPROVE)
      await r.call
      await expect(r.planMode.exitTool.execute({ plan: PLAN }, { agent: r.agent })).rejects.toThrow(
        'exit_plan_mode is only available in plan mode',
      )
      expect(r.review.requests).toHaveLength(1)
    })

    it('R42: 4 the trimmed plan must start with a heading of any level on the same line', async () => {
      const h = createHarness()
      await h.planMode.set(h.agent, true)
      const message = 'exit_plan_mode requires a non-empty markdown plan starting with a # heading'
      for (const plan of ['', '   ', 'Plan\n# Title', '#Title', '####### Seven', '#\nTitle', '# ', '#\t\n']) {
        await expect(h.planMode.exitTool.execute({ plan }, { agent: h.agent })).rejects.toThrow(new Error(message))
      }
      for (const plan of ['# A', '\n\n  ## B\ntext', '###### Six', '#\tTabbed']) {
        const asked = h.review.requests.length + 1
        const call = h.planMode.exitTool.execute({ plan }, { agent: h.agent })
        await h.review.untilAsked(asked)
        h.review.answer(KEEP_PLANNING)
        await expect(call).rejects.toThrow('The user chose to keep planning; revise the plan and present it again.')
      }
    })

    it('R42: 5 a plan over 256 KiB of UTF-8 is too large', async () => {
      const h = createHarness()
      await h.planMode.set(h.agent, true)
      const fits = '# Big\n' + 'x'.repeat(256 * 1024 - 6)
      const over = '# Big\n' + 'é'.repeat(128 * 1024) // 2 bytes each: over by the heading
      await expect(h.planMode.exitTool.execute({ plan: over }, { agent: h.agent })).rejects.toThrow(
        new Error('exit_plan_mode plan is too large (over 256 KiB)'),
      )
      const call = h.planMode.exitTool.execute({ plan: fits }, { agent: h.agent })
      await h.review.untilAsked(1)
      h.review.answer(APPROVE)
      expect(await call).toEqual({ approved: true })
    })

    it('R42: 6 a review already open', async () => {
      const r = await reviewing()
      await expect(r.planMode.exitTool.execute({ plan: PLAN }, { agent: r.agent })).rejects.toThrow(
        new Error('a plan review is already open for this agent; wait for its answer'),
      )
      // The first review is untouched.
      expect(r.request.signal.aborted).toBe(false)
      r.review.answer(APPROVE)
      expect(await r.settled).toEqual({ value: { approved: true } })
    })

    it('R42: 7 an owned agent cannot ask the user', async () => {
      const h = createHarness({ agent: { owner: 'parent-agent' } })
      await h.planMode.set(h.agent, true)
      await expect(h.planMode.exitTool.execute({ plan: PLAN }, { agent: h.agent })).rejects.toThrow(
        new Error(
          "human interaction is unavailable while the calling agent is owned by another live agent; include the unresolved question or decision in the child agent's final result",
        ),
      )
      // An empty owner is no owner.
      const free = createHarness({ agent: { owner: '' } })
      await free.planMode.set(free.agent, true)
      const call = free.planMode.exitTool.execute({ plan: PLAN }, { agent: free.agent })
      await free.review.untilAsked(1)
      free.review.answer(APPROVE)
      expect(await call).toEqual({ approved: true })
    })

    it('R42: 8 no review channel', async () => {
      const h = createHarness({ review: null })
      await h.planMode.set(h.agent, true)
      await expect(h.planMode.exitTool.execute({ plan: PLAN }, { agent: h.agent })).rejects.toThrow(
        new Error(
          'no user-interaction channel is available to review the plan; ask the user to switch the session mode instead',
        ),
      )
      expect(h.planMode.get(h.agent)).toEqual({ active: true })
      expect(reviewLines(h.lines())).toEqual([])
    })
  })

  it('R43: the review asks one exact question, with the agent and a service-owned signal', async () => {
    const r = await reviewing()
    expect(r.request.questions).toEqual([
      {
        id: 'plan-review',
        header: 'Plan review',
        question: 'Approve this plan and leave plan mode?',
        detail: PLAN,
        options: [
          { label: 'Approve', description: 'Leave plan mode; the plan is carried out from the next step.' },
          { label: 'Keep planning', description: 'Stay in plan mode; feedback goes back to the model.' },
        ],
        intent: { kind: 'plan-review', approve: 'Approve' },
      },
    ])
    expect(r.request.agent).toBe(r.agent)
    expect(r.request.signal).toBeInstanceOf(AbortSignal)
    expect(r.request.signal).not.toBe(r.controller.signal)
    expect(r.request.signal.aborted).toBe(false)
  })

  describe('R44: consent is exactly one plan-review item selecting only Approve with no custom text', () => {
    const consent: [string, ReviewAnswer][] = [
      ['plain', APPROVE],
      ['blank custom', { answers: [{ id: 'plan-review', selected: ['Approve'], custom: '  \n' }] }],
      ['other ids ignored', { answers: [{ id: 'other', selected: ['x'] }, { id: 'plan-review', selected: ['Approve'] }] }],
    ]
    const keep: [string, ReviewAnswer][] = [
      ['no item', { answers: [] }],
      ['only other ids', { answers: [{ id: 'other', selected: ['Approve'] }] }],
      ['duplicates', { answers: [{ id: 'plan-review', selected: ['Approve'] }, { id: 'plan-review', selected: ['Approve'] }] }],
      ['several selections', { answers: [{ id: 'plan-review', selected: ['Approve', 'Keep planning'] }] }],
      ['Keep planning', KEEP_PLANNING],
      ['custom alone', { answers: [{ id: 'plan-review', selected: [], custom: 'more tests' }] }],
      ['Approve with custom', { answers: [{ id: 'plan-review', selected: ['Approve'], custom: 'but add tests' }] }],
      ['lowercase', { answers: [{ id: 'plan-review', selected: ['approve'] }] }],
    ]
    for (const [name, answer] of consent) {
      it(`R44: consent — ${name}`, async () => {
        const r = await reviewing()
        r.review.answer(answer)
        expect(await r.settled).toEqual({ value: { approved: true } })
      })
    }
    for (const [name, answer] of keep) {
      it(`R44: keep planning — ${name}`, async () => {
        const r = await reviewing()
        r.review.answer(answer)
        expect(await r.settled).toHaveProperty('error')
        expect(r.planMode.get(r.agent)).toEqual({ active: true })
      })
    }
  })

  it('R45: keep-planning texts, with feedback verbatim', async () => {
    const a = await reviewing()
    a.review.answer({ answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: '  Add a rollback step.\n' }] })
    expect(await a.settled).toEqual({ error: 'The user chose to keep planning; their feedback:   Add a rollback step.\n' })
    const b = await reviewing()
    b.review.answer({ answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: ' ' }] })
    expect(await b.settled).toEqual({ error: 'The user chose to keep planning; revise the plan and present it again.' })
    const c = await reviewing()
    c.review.answer({ answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: 'x' }, { id: 'plan-review', selected: [] }] })
    expect(await c.settled).toEqual({ error: 'The user chose to keep planning; revise the plan and present it again.' })
  })

  it('R46: a dismissal (ASK_CANCELLED) fails with the dismissal text', async () => {
    const r = await reviewing()
    r.review.reject(Object.assign(new Error('cancelled'), { code: 'ASK_CANCELLED' }))
    expect(await r.settled).toEqual({
      error:
        'The user dismissed the plan review to speak instead; stay in plan mode, stop here, and wait for their message.',
    })
    expect(reviewLines(r.lines())).toEqual([
      `plan/review {"outcome":"dismissed","title":"Migrate the database","plan":${JSON.stringify(PLAN)}}`,
    ])
  })

  it('R46: any other rejection, or a synchronous throw, fails with its own message', async () => {
    const r = await reviewing()
    r.review.reject(new Error('channel closed'))
    expect(await r.settled).toEqual({ error: 'channel closed' })
    const h = createHarness({
      review: {
        ask() {
          throw new Error('no terminal')
        },
      },
    })
    await h.planMode.set(h.agent, true)
    await expect(h.planMode.exitTool.execute({ plan: PLAN }, { agent: h.agent })).rejects.toThrow(new Error('no terminal'))
    expect(reviewLines(h.lines())).toEqual([
      `plan/review {"outcome":"failed","title":"Migrate the database","plan":${JSON.stringify(PLAN)}}`,
    ])
    expect(h.planMode.actor(h.agent).getSnapshot().status).toBe('active')
  })

  it("R46: the call's abort fails it at once with the reason's message; a later answer is ignored", async () => {
    const r = await reviewing()
    r.controller.abort(new Error('turn cancelled'))
    expect(await r.settled).toEqual({ error: 'turn cancelled' })
    expect(r.request.signal.aborted).toBe(true)
    r.review.answer(APPROVE)
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(r.planMode.get(r.agent)).toEqual({ active: true })
    expect(reviewLines(r.lines())).toEqual([
      `plan/review {"outcome":"aborted","title":"Migrate the database","plan":${JSON.stringify(PLAN)}}`,
    ])
  })

  it('R46: a non-Error reason gives "the plan review was aborted"; a plain abort() the platform message', async () => {
    const a = await reviewing()
    a.controller.abort('user hit escape')
    expect(await a.settled).toEqual({ error: 'the plan review was aborted' })
    const b = await reviewing()
    b.controller.abort()
    expect(await b.settled).toEqual({ error: 'This operation was aborted' })
  })

  it('R46: a signal aborted before the question is asked fails the call at once', async () => {
    const h = createHarness()
    await h.planMode.set(h.agent, true)
    const controller = new AbortController()
    controller.abort(new Error('too late'))
    await expect(h.planMode.exitTool.execute({ plan: PLAN }, { agent: h.agent, signal: controller.signal })).rejects.toThrow(
      new Error('too late'),
    )
    expect(h.review.requests).toHaveLength(0)
    expect(h.planMode.get(h.agent)).toEqual({ active: true })
  })

  it('R47: consent: K inactive, P leaving (silent), section empty; the next boundary appends false without a notice', async () => {
    const r = await reviewing()
    r.review.answer(APPROVE)
    expect(await r.call).toStrictEqual({ approved: true })
    expect(r.planMode.get(r.agent)).toStrictEqual({ active: true, pending: false })
    expect(r.planMode.section(r.agent)).toBe('')
    expect(await r.step()).toEqual({ section: '', notices: [] })
    expect(r.planModeLines()).toEqual([true, false])
  })

  it('R47: consent while only an entry is queued (F inactive) cancels the entry', async () => {
    const h = createHarness()
    h.startTurn()
    await h.step()
    await h.planMode.set(h.agent, true)
    const call = h.planMode.exitTool.execute({ plan: PLAN }, { agent: h.agent })
    await h.review.untilAsked(1)
    h.review.answer(APPROVE)
    expect(await call).toEqual({ approved: true })
    expect(h.planMode.get(h.agent)).toStrictEqual({ active: false })
    expect(await h.step()).toEqual({ section: '', notices: [] })
    expect(h.planModeLines()).toEqual([])
  })

  it('R48: a user selection closes the review before the selection follows R8–R10', async () => {
    const r = await reviewing()
    const order: string[] = []
    void r.settled.then(() => order.push('call failed'))
    const selection = r.planMode.set(r.agent, false).then((outcome) => {
      order.push(`set ${outcome}`)
      return outcome
    })
    expect(await selection).toBe('queued')
    expect(await r.settled).toEqual({ error: 'The user changed the plan mode directly; the review is closed.' })
    expect(order).toEqual(['call failed', 'set queued'])
    expect(r.request.signal.aborted).toBe(true)
    expect(r.planMode.get(r.agent)).toEqual({ active: true, pending: false })
    expect(reviewLines(r.lines())).toEqual([
      `plan/review {"outcome":"superseded","title":"Migrate the database","plan":${JSON.stringify(PLAN)}}`,
    ])
  })

  it('R48: /plan off while reviewing (idle) closes the review even if its own append then fails', async () => {
    const h = createHarness()
    await h.planMode.set(h.agent, true)
    const call = h.planMode.exitTool.execute({ plan: PLAN }, { agent: h.agent })
    const settled = call.catch((e: Error) => e.message)
    await h.review.untilAsked(1)
    h.log.failNext('plan/mode', 'throw')
    expect(await h.planMode.command.run({ agent: h.agent, rawInput: 'off' })).toEqual({
      kind: 'error',
      text: 'Plan mode could not be changed: append of plan/mode failed',
    })
    expect(await settled).toBe('The user changed the plan mode directly; the review is closed.')
    expect(h.planMode.get(h.agent)).toEqual({ active: true })
    expect(reviewLines(h.lines())).toHaveLength(1)
  })

  it('R49: every outcome is recorded as plan/review { outcome, title, plan, feedback? } before the call settles', async () => {
    const a = await reviewing()
    a.review.answer({ answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: 'Add tests' }] })
    await a.settled
    const revised = '# Migrate the database v2\n\n1. Back up.\n2. Test.\n3. Migrate.'
    const second = a.planMode.exitTool.execute({ plan: revised }, { agent: a.agent })
    await a.review.untilAsked(2)
    let recordedBeforeSettle = false
    void second.then(() => {
      recordedBeforeSettle = reviewLines(a.lines()).length === 2
    })
    a.review.answer(APPROVE)
    await second
    expect(recordedBeforeSettle).toBe(true)
    expect(reviewLines(a.lines())).toEqual([
      `plan/review {"outcome":"keep-planning","title":"Migrate the database","plan":${JSON.stringify(PLAN)},"feedback":"Add tests"}`,
      `plan/review {"outcome":"approved","title":"Migrate the database v2","plan":${JSON.stringify(revised)}}`,
    ])
  })

  it('R49: a failed record is contained with a warning; the outcome still applies', async () => {
    const r = await reviewing()
    r.log.failNext('plan/review', 'throw')
    r.review.answer(APPROVE)
    expect(await r.settled).toEqual({ value: { approved: true } })
    expect(r.warnings).toEqual([['plan-mode: review record failed', r.log.appendErrors[0]]])
    expect(r.planMode.get(r.agent)).toEqual({ active: true, pending: false })
    expect(r.planMode.actor(r.agent).getSnapshot().status).toBe('active')
  })

  it('R49: a rejected (async) record is contained the same way', async () => {
    const r = await reviewing({ async: true })
    r.log.failNext('plan/review', 'reject')
    r.review.answer(KEEP_PLANNING)
    expect(await r.settled).toEqual({ error: 'The user chose to keep planning; revise the plan and present it again.' })
    expect(r.warnings).toEqual([['plan-mode: review record failed', r.log.appendErrors[0]]])
  })

  it('R50: resultText is exact', () => {
    expect(createHarness().planMode.exitTool.resultText).toBe(
      'Plan approved — plan mode exited; carry out the plan starting with your next step.',
    )
  })

  it('R51: presentCall and presentResult cards', () => {
    const { exitTool } = createHarness().planMode
    expect(exitTool.presentCall({ plan: 'Intro\n\n### Step list  \t\nmore\n# Later' })).toEqual({
      card: 'generic',
      title: 'Step list',
      kind: 'other',
      content: [{ type: 'text', text: 'Intro\n\n### Step list  \t\nmore\n# Later' }],
    })
    expect(exitTool.presentCall({ plan: 'no heading at all' })).toEqual({
      card: 'generic',
      title: 'Plan',
      kind: 'other',
      content: [{ type: 'text', text: 'no heading at all' }],
    })
    const content = [{ type: 'text', text: 'Plan approved' }]
    expect(exitTool.presentResult({ plan: PLAN }, { content })).toEqual({ card: 'generic', title: 'Plan review', content })
  })

  it('R52: plan mode never gates other tools: the service exposes no tool filter and the tool list is one tool', async () => {
    const h = createHarness()
    const keys = Object.keys(h.planMode).sort()
    expect(keys).toEqual(['actor', 'answerReview', 'answerReviewByPolicy', 'approvedPlan', 'callReviews', 'command', 'decisions', 'detach', 'dismissReview', 'dispose', 'exitTool', 'get', 'openReview', 'projection', 'section', 'set', 'step', 'stepBoundary'])
    await h.planMode.set(h.agent, true)
    // The only effect of plan mode on a request is the section (R18) and notices (R32).
    h.startTurn()
    expect(await h.step()).toEqual({ section: SECTION, notices: [] })
    await h.planMode.set(h.agent, false)
    expect(await h.step()).toEqual({ section: '', notices: [expect.any(String)] })
    expect(ENTERING).not.toBe('')
  })
})

describe('R72 an answered review is recorded as soon as the append in flight has landed', () => {
  it('R72: an approval that arrives during a held flush is recorded before a selection queued behind the flush', async () => {
    const h = createHarness()
    h.startTurn()
    await h.planMode.set(h.agent, true) // queued: P entering
    const call = h.planMode.exitTool.execute({ plan: PLAN }, { agent: h.agent })
    await h.review.untilAsked(1)
    await new Promise((resolve) => setTimeout(resolve, 0)) // the exit call's operation has ended
    h.log.failNext('plan/mode', 'hold')
    const boundary = h.planMode.stepBoundary(h.agent) // flushes plan/mode true, held
    const leave = h.planMode.set(h.agent, false) // called before the answer, waits behind the flush
    h.review.answer(APPROVE)
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(h.planMode.actor(h.agent).getSnapshot().matches({ review: { open: { undecided: 'answered' } } })).toBe(true)
    h.log.release()
    expect(await call).toEqual({ approved: true })
    expect((await boundary).section).toBe(SECTION)
    // The approval went first, so the queued selection finds E inactive: a noop, not a supersede (R48).
    expect(await leave).toBe('noop')
    expect(h.planMode.get(h.agent)).toEqual({ active: true, pending: false })
    expect(reviewLines(h.lines())).toEqual([
      `plan/review {"outcome":"approved","title":"Migrate the database","plan":${JSON.stringify(PLAN)}}`,
    ])
  })
})
