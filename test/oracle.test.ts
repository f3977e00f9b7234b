import { describe, expect, it } from 'vitest'
import {
  PlanModeOracle,
  TEXT,
  abortReasonMessage,
  foldF,
  foldK,
  foldKept,
  foldOpenTurn,
  foldP,
  headingTitle,
  readAnswer,
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
})
