import { describe, expect, it } from 'vitest'
import {
  PlanModeOracle,
  TEXT,
  abortReasonMessage,
  abandonedText,
  badPolicyText,
  expectedQuestion,
  foldApprovedPlan,
  foldF,
  foldK,
  foldKept,
  foldOpenTurn,
  foldP,
  headingTitle,
  newsMessage,
  newsOfRecord,
  readAnswer,
  readDecision,
  startsWithHeading,
} from './oracle.js'

/**
 * The oracle's own checks: its folds and readers against SPEC's wording, so that the
 * model-based and property tests compare the service with something that is itself pinned.
 */
const mode = (active: boolean) => ({ type: 'plan/mode', data: { active } })
const run = (commandId: string, args: string) => ({ type: 'command/run', data: { commandId, name: 'plan', args } })
const done = (commandId: string, kind: string) => ({ type: 'command/done', data: { commandId, kind } })
const header = { type: 'request/header', data: {} }
const approved = { type: 'plan/review', data: { outcome: 'approved', title: 'T', plan: '# T' } }

describe('the oracle', () => {
  it('oracle, R2: F is the last plan/mode, or false', () => {
    expect(foldF([])).toBe(false)
    expect(foldF([mode(true), header, mode(false), mode(true)])).toBe(true)
  })

  it('oracle, R5: a turn is open when the latest of turn/start, turn/end is a turn/start', () => {
    expect(foldOpenTurn([])).toBe(false)
    expect(foldOpenTurn([{ type: 'turn/start', data: {} }, header])).toBe(true)
    expect(foldOpenTurn([{ type: 'turn/start', data: {} }, { type: 'turn/end', data: {} }])).toBe(false)
  })

  it('oracle, R31: K is the later of the last request/header (the fold there) and the last approved review (inactive)', () => {
    expect(foldK([mode(true)])).toBeUndefined()
    expect(foldK([mode(true), header, mode(false)])).toBe(true)
    expect(foldK([mode(true), header, approved])).toBe(false)
    expect(foldK([approved, mode(true), header])).toBe(true)
  })

  it('oracle, R64: P after attach is the kept selection (R58) where it differs from F', () => {
    expect(foldKept([run('1', 'off'), done('1', 'success')])).toBe(false)
    expect(foldP([run('1', 'off'), done('1', 'success')])).toBeUndefined()
    expect(foldP([run('1', ''), done('1', 'success')])).toBe(true)
    expect(foldP([run('1', ''), done('1', 'error')])).toBeUndefined()
    expect(foldP([run('1', ''), done('1', 'success'), mode(true)])).toBeUndefined()
    expect(foldP([mode(true), approved])).toBe(false)
    // A later /plan that cancelled an approved exit wins over it.
    expect(foldP([mode(true), approved, run('2', ' ON '), done('2', 'success')])).toBeUndefined()
    // The latest settled success wins, by commandId.
    expect(foldP([run('a', ''), run('b', 'OFF'), done('b', 'success'), done('a', 'success')])).toBe(true)
  })

  it('oracle, R42: the trimmed plan must start with a heading of level 1–6 with text on its line', () => {
    for (const plan of ['# T', '  ## T', '\n###### T', '#\tT']) expect(startsWithHeading(plan), plan).toBe(true)
    for (const plan of ['', '   ', '#T', '####### T', '# ', 'x\n# T']) expect(startsWithHeading(plan), plan).toBe(false)
  })

  it('oracle, R51: the title is the first heading of any level, trailing whitespace removed', () => {
    expect(headingTitle('intro\n## Deep title  \n# Later')).toBe('Deep title')
    expect(headingTitle('no heading')).toBeUndefined()
  })

  it('oracle, R44: consent is exactly one plan-review item selecting exactly Approve with blank or no custom text', () => {
    const item = (selected: string[], custom?: string) => ({ id: 'plan-review', selected, ...(custom === undefined ? {} : { custom }) })
    expect(readAnswer({ answers: [item(['Approve'])] })).toEqual({ approved: true })
    expect(readAnswer({ answers: [item(['Approve'], ' \n')] })).toEqual({ approved: true })
    expect(readAnswer({ answers: [{ id: 'x', selected: ['Keep planning'] }, item(['Approve'])] })).toEqual({ approved: true })
    expect(readAnswer({ answers: [item(['Approve']), item(['Approve'])] })).toEqual({ approved: false })
    expect(readAnswer({ answers: [] })).toEqual({ approved: false })
    expect(readAnswer({ answers: [item(['Approve', 'Keep planning'])] })).toEqual({ approved: false })
    expect(readAnswer({ answers: [item(['Keep planning'])] })).toEqual({ approved: false })
    // R45: the feedback is the non-blank custom text, verbatim.
    expect(readAnswer({ answers: [item(['Approve'], ' but use SQLite ')] })).toEqual({ approved: false, feedback: ' but use SQLite ' })
    expect(readAnswer({ answers: [item([], 'why?')] })).toEqual({ approved: false, feedback: 'why?' })
  })

  it('oracle, R46: an abort fails with the reason\'s message, or "the plan review was aborted"', () => {
    expect(abortReasonMessage(new Error('stop'))).toBe('stop')
    expect(abortReasonMessage('stop')).toBe(TEXT.aborted)
  })

  it('oracle, R47: consent while F is active queues a silent leave; the next boundary appends it without a notice', () => {
    const oracle = new PlanModeOracle({ section: 'S', hasChannel: true })
    oracle.addAgent('a')
    oracle.set('a', true)
    oracle.hostAppend('a', 'turn/start', {})
    expect(oracle.boundary('a').state).toEqual({ status: 'resolved', value: { section: 'S', notices: [] } })
    const call = oracle.execute({ agentId: 'a', args: { plan: '# T' } })
    oracle.answer(oracle.asks[0]!, { answers: [{ id: 'plan-review', selected: ['Approve'] }] })
    expect(call.state).toEqual({ status: 'resolved', value: { approved: true } })
    expect(oracle.get('a')).toEqual({ active: true, pending: false })
    expect(oracle.boundary('a').state).toEqual({ status: 'resolved', value: { section: '', notices: [] } })
    expect(oracle.log('a').map((e) => e.type)).toEqual(['plan/mode', 'turn/start', 'plan/review', 'plan/mode'])
  })

  it('oracle, R48: a selection during a review closes it before it follows R8–R10', () => {
    const oracle = new PlanModeOracle({ section: 'S', hasChannel: true })
    oracle.addAgent('a')
    oracle.set('a', true)
    const call = oracle.execute({ agentId: 'a', args: { plan: '# T' } })
    expect(oracle.set('a', false).state).toEqual({ status: 'resolved', value: 'committed' })
    expect(call.state).toEqual({ status: 'rejected', message: TEXT.superseded })
    expect(oracle.asks[0]!.aborted).toBe(true)
    expect(oracle.log('a')).toEqual([
      mode(true),
      { type: 'plan/review', data: { outcome: 'superseded', title: 'T', plan: '# T' } },
      mode(false),
    ])
  })

  it('oracle, R73: the close timeout abandons a detached agent\'s append: one warning, the selection fails with it, and the next call waits for the append to settle before it re-attaches from the log', () => {
    const oracle = new PlanModeOracle({ section: 'S', hasChannel: true, closeTimeoutMs: 20, appendFate: () => ({ kind: 'hold' }) })
    oracle.addAgent('a')
    const selection = oracle.set('a', true) // its commit is held
    oracle.detach('a')
    const queued = oracle.set('a', false) // behind the detach: runs on the next attachment
    expect(oracle.isClosing('a')).toBe(true)
    expect(oracle.get('a')).toEqual({ active: false }) // the detached attachment still answers reads
    oracle.expireCloseTimeouts()
    expect(oracle.isClosing('a')).toBe(false)
    expect(selection.state).toEqual({ status: 'rejected', message: abandonedText(20) })
    expect(oracle.warnings).toEqual([{ message: abandonedText(20), error: undefined }])
    // The abandoned append may still land: the queued selection waits for it; reads do not.
    expect(queued.state).toEqual({ status: 'pending' })
    expect(oracle.isWaitingForAbandoned('a')).toBe(true)
    expect(oracle.get('a')).toEqual({ active: false })
    // A publish alone does not settle it.
    const [held] = oracle.heldAppends()
    oracle.publish(held!.handle)
    expect(oracle.isWaitingForAbandoned('a')).toBe(true)
    expect(oracle.get('a')).toEqual({ active: true })
    // It resolves: the selection runs on the log that holds it, and commits the real flip back.
    oracle.resolve(held!.handle)
    expect(oracle.isWaitingForAbandoned('a')).toBe(false)
    expect(queued.state).toEqual({ status: 'pending' }) // its own commit is held
    oracle.resolve(oracle.heldAppends()[0]!.handle)
    expect(queued.state).toEqual({ status: 'resolved', value: 'committed' })
    expect(oracle.log('a')).toEqual([mode(true), mode(false)])
    expect(oracle.warnings).toHaveLength(1)
    expect(oracle.abandonedModeLanded('a')).toBe(false)
    // A second expiry finds nothing to abandon.
    oracle.expireCloseTimeouts()
    expect(oracle.warnings).toHaveLength(1)
  })

  it('oracle, R73: a selection repeated after an abandoned one that landed is a noop, not a second identical plan/mode', () => {
    const oracle = new PlanModeOracle({ section: 'S', hasChannel: true, closeTimeoutMs: 20, appendFate: () => ({ kind: 'hold' }) })
    oracle.addAgent('a')
    oracle.set('a', true)
    oracle.detach('a')
    oracle.expireCloseTimeouts()
    const again = oracle.set('a', true) // made after the abandonment: waits too
    const boundary = oracle.boundary('a') // behind it
    expect(again.state).toEqual({ status: 'pending' })
    oracle.resolve(oracle.heldAppends()[0]!.handle)
    expect(again.state).toEqual({ status: 'resolved', value: 'noop' })
    expect(boundary.state).toEqual({ status: 'resolved', value: { section: 'S', notices: [] } })
    expect(oracle.log('a')).toEqual([mode(true)])
    expect(oracle.abandonedModeLanded('a')).toBe(false)
  })

  it('oracle, R73: a failed abandoned append ends the wait too; one settled before any operation leaves nothing to wait for', () => {
    const oracle = new PlanModeOracle({ section: 'S', hasChannel: true, closeTimeoutMs: 20, appendFate: () => ({ kind: 'hold' }) })
    oracle.addAgent('a')
    oracle.set('a', true)
    oracle.detach('a')
    oracle.expireCloseTimeouts()
    const again = oracle.set('a', true)
    oracle.reject(oracle.heldAppends()[0]!.handle, new Error('down'))
    expect(again.state).toEqual({ status: 'pending' }) // ran: its own commit is held
    oracle.resolve(oracle.heldAppends()[0]!.handle)
    expect(again.state).toEqual({ status: 'resolved', value: 'committed' })
    oracle.set('a', false)
    oracle.detach('a')
    oracle.expireCloseTimeouts()
    oracle.resolve(oracle.heldAppends()[0]!.handle) // lands before any operation's turn
    expect(oracle.isWaitingForAbandoned('a')).toBe(false)
    oracle.appendFate = () => ({ kind: 'ok' })
    expect(oracle.set('a', false).state).toEqual({ status: 'resolved', value: 'noop' })
    expect(oracle.log('a')).toEqual([mode(true), mode(false)])
  })

  it('oracle, R73: the wait gives up after another close timeout (then a late landing may repeat the flip) and ends at dispose', () => {
    const oracle = new PlanModeOracle({ section: 'S', hasChannel: true, closeTimeoutMs: 20, appendFate: () => ({ kind: 'hold' }) })
    oracle.addAgent('a')
    oracle.addAgent('b')
    oracle.set('a', true)
    oracle.set('b', true)
    oracle.detach('a')
    oracle.detach('b')
    oracle.expireCloseTimeouts()
    const onA = oracle.set('a', true)
    oracle.expireCloseTimeouts() // a's wait gives up: the selection goes on, on the log as it is
    expect(oracle.warnings).toHaveLength(2)
    expect(onA.state).toEqual({ status: 'pending' }) // its own commit is held
    const [abandonedA, , commitA] = oracle.heldAppends()
    expect(commitA).toMatchObject({ agentId: 'a', type: 'plan/mode', data: { active: true }, abandoned: false })
    oracle.resolve(commitA!.handle)
    expect(onA.state).toEqual({ status: 'resolved', value: 'committed' })
    oracle.resolve(abandonedA!.handle) // lands late: the same flip twice, as the spec allows then
    expect(oracle.log('a')).toEqual([mode(true), mode(true)])
    expect(oracle.abandonedModeLanded('a')).toBe(true)
    const onB = oracle.set('b', false)
    const exitOnB = oracle.execute({ agentId: 'b', args: { plan: '# T' } })
    oracle.dispose()
    expect(onB.state).toEqual({ status: 'rejected', message: TEXT.disposedBeforeTurn })
    expect(exitOnB.state).toEqual({ status: 'rejected', message: TEXT.reloaded })
    expect(oracle.abandonedModeLanded('b')).toBe(false)
  })

  it('oracle, R73: an exit call whose review record never settled fails as reloaded, even when approved; the next attachment reads a log without the approval', () => {
    const oracle = new PlanModeOracle({ section: 'S', hasChannel: true })
    oracle.addAgent('a')
    oracle.set('a', true)
    oracle.hostAppend('a', 'turn/start', {})
    const call = oracle.execute({ agentId: 'a', args: { plan: '# T' } })
    oracle.appendFate = () => ({ kind: 'hold' })
    oracle.answer(oracle.asks[0]!, { answers: [{ id: 'plan-review', selected: ['Approve'] }] }) // its record is held
    oracle.detach('a')
    oracle.expireCloseTimeouts()
    expect(call.state).toEqual({ status: 'rejected', message: TEXT.reloaded })
    expect(oracle.warnings).toEqual([{ message: abandonedText(5000), error: undefined }])
    expect(oracle.get('a')).toEqual({ active: true }) // re-attached from the log: no approval in it
    expect(oracle.heldAppends().map((h) => h.type)).toEqual(['plan/review'])
  })

  it('oracle, R60: operations called before dispose and still waiting for their turn do nothing: the exit call fails as reloaded, the others as disposed before their turn', () => {
    const oracle = new PlanModeOracle({ section: 'S', hasChannel: true, appendFate: () => ({ kind: 'hold' }) })
    oracle.addAgent('a', [{ type: 'turn/start', data: {} }])
    expect(oracle.set('a', true).state).toEqual({ status: 'resolved', value: 'queued' })
    const boundary = oracle.boundary('a') // its flush is held
    const selection = oracle.set('a', false)
    const call = oracle.execute({ agentId: 'a', args: { plan: '# T' } })
    const command = oracle.command({ agentId: 'a', rawInput: 'off', canSteer: true })
    const nextBoundary = oracle.boundary('a')
    oracle.dispose()
    expect(oracle.set('a', false).state).toEqual({ status: 'rejected', message: TEXT.disposed })
    oracle.resolve(oracle.heldAppends()[0]!.handle)
    expect(boundary.state).toEqual({ status: 'resolved', value: { section: 'S', notices: [] } })
    expect(selection.state).toEqual({ status: 'rejected', message: TEXT.disposedBeforeTurn })
    expect(call.state).toEqual({ status: 'rejected', message: TEXT.reloaded })
    expect(command.state).toEqual({ status: 'resolved', value: { kind: 'error', text: TEXT.notChanged + TEXT.disposedBeforeTurn } })
    expect(nextBoundary.state).toEqual({ status: 'rejected', message: TEXT.disposedBeforeTurn })
    expect(oracle.log('a')).toEqual([{ type: 'turn/start', data: {} }, mode(true)])
  })
  it("oracle, R94: a policy's answer or ASK_CANCELLED dismissal settles the call as a user's does; its record ends with by: 'policy', any other `by` is not read", () => {
    const approve = { answers: [{ id: 'plan-review', selected: ['Approve'] }] }
    const review = (settle: (oracle: PlanModeOracle) => void) => {
      const oracle = new PlanModeOracle({ section: 'S', hasChannel: true })
      oracle.addAgent('a')
      oracle.set('a', true)
      const call = oracle.execute({ agentId: 'a', args: { plan: '# T' } })
      settle(oracle)
      return { call: call.state, record: JSON.stringify(oracle.log('a').at(-1)!.data) }
    }
    const dismissal = (by?: string) => Object.assign(new Error(TEXT.headlessStop), { code: 'ASK_CANCELLED', ...(by ? { by } : {}) })
    expect(review((o) => o.answer(o.asks[0]!, { ...approve, by: 'policy' }))).toEqual({
      call: { status: 'resolved', value: { approved: true } },
      record: '{"outcome":"approved","title":"T","plan":"# T","by":"policy"}',
    })
    expect(review((o) => o.answer(o.asks[0]!, approve)).record).toBe('{"outcome":"approved","title":"T","plan":"# T"}')
    expect(review((o) => o.answer(o.asks[0]!, { ...approve, by: 'user' })).record).toBe('{"outcome":"approved","title":"T","plan":"# T"}')
    expect(review((o) => o.rejectAsk(o.asks[0]!, dismissal('policy')))).toEqual({
      call: { status: 'rejected', message: TEXT.dismissed },
      record: '{"outcome":"dismissed","title":"T","plan":"# T","by":"policy"}',
    })
    expect(review((o) => o.rejectAsk(o.asks[0]!, dismissal())).record).toBe('{"outcome":"dismissed","title":"T","plan":"# T"}')
    // Only a dismissal carries its decider: another rejection fails the call, recorded failed without `by`.
    const failure = Object.assign(new Error('down'), { by: 'policy' })
    expect(review((o) => o.rejectAsk(o.asks[0]!, failure))).toEqual({
      call: { status: 'rejected', message: 'down' },
      record: '{"outcome":"failed","title":"T","plan":"# T"}',
    })
    const feedback = { answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: 'why?' }], by: 'policy' }
    expect(review((o) => o.answer(o.asks[0]!, feedback)).record).toBe('{"outcome":"keep-planning","title":"T","plan":"# T","feedback":"why?","by":"policy"}')
  })

  it("oracle, R95: answerReviewByPolicy checks the policy, then dispose; with no durable review open it resolves null; else it records by: 'policy' last and resolves { reviewId, outcome }", () => {
    const durable = () => {
      const oracle = new PlanModeOracle({ section: 'S', hasChannel: false, reviews: 'durable' })
      oracle.addAgent('a')
      oracle.set('a', true)
      return oracle
    }
    const oracle = durable()
    for (const bad of [undefined, 'Stop', true]) {
      expect(oracle.answerReviewByPolicy('a', bad).state).toEqual({ status: 'rejected', message: badPolicyText(bad) })
    }
    expect(badPolicyText({ toString: () => { throw new Error('no') } })).toBe("headless review policy must be 'stop' or 'approve'; got [object Object]")
    expect(oracle.answerReviewByPolicy('a', 'approve').state).toEqual({ status: 'resolved', value: null })
    expect(oracle.execute({ agentId: 'a', args: { plan: '# T' }, reviewId: 'r1' }).state).toEqual({ status: 'resolved', value: { submitted: true, reviewId: 'r1' } })
    expect(oracle.answerReviewByPolicy('a', 'approve', { toldInResult: true }).state).toEqual({ status: 'resolved', value: { reviewId: 'r1', outcome: 'approved' } })
    expect(JSON.stringify(oracle.log('a').at(-1))).toBe(
      '{"type":"plan/review","data":{"outcome":"approved","reviewId":"r1","title":"T","plan":"# T","toldInResult":true,"by":"policy"}}',
    )
    expect(oracle.get('a')).toEqual({ active: true, pending: false }) // R47's consent
    // 'stop': dismissed, F and P unchanged, nothing for a boundary to tell (R81).
    const stopped = durable()
    stopped.execute({ agentId: 'a', args: { plan: '# T' }, reviewId: 'r1' })
    expect(stopped.answerReviewByPolicy('a', 'stop').state).toEqual({ status: 'resolved', value: { reviewId: 'r1', outcome: 'dismissed' } })
    expect(stopped.log('a').at(-1)!.data).toEqual({ outcome: 'dismissed', reviewId: 'r1', title: 'T', plan: '# T', by: 'policy' })
    expect(stopped.get('a')).toEqual({ active: true })
    expect(stopped.boundary('a').state).toEqual({ status: 'resolved', value: { section: 'S', notices: [] } })
    expect(stopped.answerReview('a', 'r1', { answers: [] }).state).toEqual({
      status: 'rejected',
      message: 'plan review r1 is already closed (dismissed); nothing was changed',
    })
    stopped.dispose()
    expect(stopped.answerReviewByPolicy('a', 'stop').state).toEqual({ status: 'rejected', message: TEXT.disposed })
    expect(stopped.answerReviewByPolicy('a', 'Stop').state).toEqual({ status: 'rejected', message: badPolicyText('Stop') })
  })

  it("oracle, R95: by is part of an outcome: a user's approval whose record lands after a policy's approval of the same review lost, and the other way round", () => {
    for (const [own, other] of [['user', 'policy'], ['policy', 'user']] as const) {
      const oracle = new PlanModeOracle({ section: 'S', hasChannel: false, reviews: 'durable' })
      oracle.addAgent('a')
      oracle.set('a', true)
      oracle.execute({ agentId: 'a', args: { plan: '# T' }, reviewId: 'r1' })
      oracle.appendFate = () => ({ kind: 'hold' })
      const call =
        own === 'user' ? oracle.answerReview('a', 'r1', { answers: [{ id: 'plan-review', selected: ['Approve'] }] }) : oracle.answerReviewByPolicy('a', 'approve')
      const record = { outcome: 'approved', reviewId: 'r1', title: 'T', plan: '# T', ...(other === 'policy' ? { by: 'policy' } : {}) }
      oracle.hostAppend('a', 'plan/review', record)
      oracle.resolve(oracle.heldAppends()[0]!.handle)
      expect(call.state, own).toEqual({ status: 'rejected', message: 'plan review r1 is already closed (approved); nothing was changed' })
      expect(oracle.get('a'), own).toEqual({ active: true, pending: false }) // the log's first record: an approval
    }
  })

  it("oracle, R101: with decisions 'all' the question offers R43's two, then the two it adds; one option alone decides, the added labels only when offered", () => {
    expect(expectedQuestion('# T', 'all').options.map((o) => o.label)).toEqual(['Approve', 'Keep planning', 'Approve in a fresh context', 'Leave plan mode'])
    expect(expectedQuestion('# T').options.map((o) => o.label)).toEqual(['Approve', 'Keep planning'])
    const item = (selected: string[], extra: Record<string, unknown> = {}) => ({ answers: [{ id: 'plan-review', selected, ...extra }] })
    expect(readDecision(item(['Approve in a fresh context']), 'all')).toEqual({ outcome: 'approved', fresh: true })
    expect(readDecision(item(['Leave plan mode'], { custom: ' ' }), 'all')).toEqual({ outcome: 'left' })
    expect(readDecision(item(['Approve']), 'all')).toEqual({ outcome: 'approved' })
    expect(readDecision(item(['Leave plan mode']), 'approve-or-keep')).toEqual({ outcome: 'keep-planning' })
    expect(readDecision(item(['Approve in a fresh context'], { custom: 'faster' }), 'all')).toEqual({ outcome: 'keep-planning', feedback: 'faster' })
    expect(readDecision(item(['Leave plan mode'], { comments: [{ quote: 'T', text: 'no' }] }), 'all')).toEqual({ outcome: 'keep-planning' })
    expect(readDecision(item(['Leave plan mode', 'Approve']), 'all')).toEqual({ outcome: 'keep-planning' })
  })

  it('oracle, R101: a leave projects and tells K like an approval, is told at a boundary when not told in the result, and is no approved plan; a fresh approval is one', () => {
    const left = { type: 'plan/review', data: { outcome: 'left', title: 'T', plan: '# T' } }
    expect(foldK([mode(true), header, left])).toBe(false)
    expect(foldP([mode(true), left])).toBe(false)
    expect(foldApprovedPlan([mode(true), left])).toBeNull()
    expect(newsOfRecord({ outcome: 'left', reviewId: 'r1' })).toEqual({ outcome: 'left' })
    expect(newsOfRecord({ outcome: 'left', reviewId: 'r1', toldInResult: true })).toBeNull()
    expect(newsMessage({ outcome: 'left' })).toBe(TEXT.left)
    const fresh = { type: 'plan/review', data: { outcome: 'approved', title: 'T', plan: '# T', fresh: true } }
    expect(foldApprovedPlan([mode(true), fresh])).toEqual({ title: 'T', plan: '# T', seq: 2, fresh: true })
    expect(foldApprovedPlan([mode(true), fresh, mode(false)])).toEqual({ title: 'T', plan: '# T', seq: 2, fresh: true })
    expect(foldApprovedPlan([mode(true), fresh, mode(false), mode(true)])).toBeNull()
  })

  it('oracle, R101, R47: a channel leave records left, fails the call with its text, and leaves at the next boundary without a notice; a fresh approval records fresh: true', () => {
    const planning = () => {
      const oracle = new PlanModeOracle({ section: 'S', hasChannel: true, decisions: 'all' })
      oracle.addAgent('a')
      oracle.set('a', true)
      oracle.hostAppend('a', 'turn/start', {})
      oracle.boundary('a')
      return oracle
    }
    const leaving = planning()
    const call = leaving.execute({ agentId: 'a', args: { plan: '# T' } })
    leaving.answer(leaving.asks[0]!, { answers: [{ id: 'plan-review', selected: ['Leave plan mode'] }] })
    expect(call.state).toEqual({ status: 'rejected', message: TEXT.left })
    expect(JSON.stringify(leaving.log('a').at(-1)!.data)).toBe('{"outcome":"left","title":"T","plan":"# T"}')
    expect(leaving.get('a')).toEqual({ active: true, pending: false })
    expect(leaving.boundary('a').state).toEqual({ status: 'resolved', value: { section: '', notices: [] } })
    const approving = planning()
    const approved = approving.execute({ agentId: 'a', args: { plan: '# T' } })
    approving.answer(approving.asks[0]!, { answers: [{ id: 'plan-review', selected: ['Approve in a fresh context'], by: 'policy' }], by: 'policy' })
    expect(approved.state).toEqual({ status: 'resolved', value: { approved: true } })
    expect(JSON.stringify(approving.log('a').at(-1)!.data)).toBe('{"outcome":"approved","title":"T","plan":"# T","fresh":true,"by":"policy"}')
  })

  it("oracle, R101, R81: a durable leave resolves left; untold, the next boundary tells it, with no leaving notice; a fresh approval told in the result ends `fresh: true, toldInResult: true`", () => {
    const durable = () => {
      const oracle = new PlanModeOracle({ section: 'S', hasChannel: false, reviews: 'durable', decisions: 'all' })
      oracle.addAgent('a')
      oracle.set('a', true)
      oracle.boundary('a')
      oracle.execute({ agentId: 'a', args: { plan: '# T' }, reviewId: 'r1' })
      return oracle
    }
    const leaving = durable()
    expect(leaving.answerReview('a', 'r1', { answers: [{ id: 'plan-review', selected: ['Leave plan mode'] }] }).state).toEqual({ status: 'resolved', value: 'left' })
    expect(leaving.get('a')).toEqual({ active: true, pending: false })
    expect(leaving.boundary('a').state).toEqual({ status: 'resolved', value: { section: '', notices: [TEXT.left] } })
    expect(leaving.boundary('a').state).toEqual({ status: 'resolved', value: { section: '', notices: [] } })
    const approving = durable()
    approving.answerReview('a', 'r1', { answers: [{ id: 'plan-review', selected: ['Approve in a fresh context'] }] }, { toldInResult: true })
    expect(JSON.stringify(approving.log('a').at(-1)!.data)).toBe('{"outcome":"approved","reviewId":"r1","title":"T","plan":"# T","fresh":true,"toldInResult":true}')
    expect(approving.boundary('a').state).toEqual({ status: 'resolved', value: { section: '', notices: [] } })
  })
})
