import { HumanMessage, type BaseMessage } from '@langchain/core/messages'
import { Command, MemorySaver } from '@langchain/langgraph'
import { afterEach, describe, expect, it } from 'vitest'
import { APPROVE, PLAN } from './helpers.js'
import { calls, says, startGraphHost, thread, type GraphHost } from './langgraph.fixture.js'
import { UNNAMED_ANSWER_MESSAGE } from '../src/adapters/langgraph.js'

const hosts: GraphHost[] = []
afterEach(async () => {
  for (const host of hosts.splice(0)) await host.planMode.dispose()
})
async function start(checkpointer = new MemorySaver()) {
  const host = await startGraphHost(checkpointer)
  hosts.push(host)
  return host
}
type Paused = { messages: BaseMessage[]; __interrupt__?: { value: unknown }[] }
const user = (text: string) => ({ messages: [new HumanMessage(text)] })
const reviews = async (host: GraphHost, id: string) =>
  ((await host.graph.getState(thread(id))).values.planLog as { type: string; data: Record<string, unknown> }[])
    .filter((e) => e.type === 'plan/review')
    .map((e) => [e.data['reviewId'], e.data['outcome']])

describe('xstate-plan-mode/langgraph: untrusted resume values and state', () => {
  it('R146: an answer that names another review (a stale resume) is not recorded for the review open now: the run pauses again at it', async () => {
    const host = await start()
    const agent = await host.lg.agent(host.graph, thread('a1'))
    await host.planMode.set(agent, true)
    host.script(calls('exit_plan_mode', { plan: PLAN }, 'call-exit-1'))
    const first = (await host.graph.invoke(user('Plan it.'), thread('a1'))) as Paused
    const seen = first.__interrupt__![0]!.value as { reviewId: string }
    // Another of the user's screens keeps planning on that card; the run resumes and presents another plan.
    await host.planMode.answerReview(await host.lg.agent(host.graph, thread('a1')), seen.reviewId, { answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: 'Drop the old tables too.' }] })
    const other = `${PLAN}\n3. Drop the old tables.`
    host.script(calls('exit_plan_mode', { plan: other }, 'call-exit-2'))
    const second = (await host.graph.invoke((await host.lg.resumeClosedReview(host.graph, thread('a1')))!, thread('a1'))) as Paused
    const now = second.__interrupt__![0]!.value as { reviewId: string; plan: string }
    expect(now.plan).toBe(other)
    expect(now.reviewId).not.toBe(seen.reviewId)
    // The approval given on the first screen, for the first card, arrives now.
    const stale = (await host.graph.invoke(new Command({ resume: { ...APPROVE, reviewId: seen.reviewId } }), thread('a1'))) as Paused
    expect((stale.__interrupt__![0]!.value as { reviewId: string }).reviewId).toBe(now.reviewId)
    const again = await host.lg.agent(host.graph, thread('a1'))
    expect(host.planMode.openReview(again)).toMatchObject({ reviewId: now.reviewId, plan: other })
    expect((await reviews(host, 'a1')).filter(([, outcome]) => outcome === 'approved')).toEqual([])
    // The answer given on the card open now, naming it, is recorded.
    host.script(says('Carrying it out.'))
    await host.graph.invoke(new Command({ resume: { ...APPROVE, reviewId: now.reviewId } }), thread('a1'))
    expect((await reviews(host, 'a1')).filter(([, outcome]) => outcome === 'approved')).toEqual([[now.reviewId, 'approved']])
  })

  it('R145: appends queued behind one another writer beat reject too: none lands after a seq this process never read', async () => {
    const saver = new MemorySaver()
    const one = await start(saver)
    const two = await start(saver)
    const a = await one.lg.agent(one.graph, thread('a3'))
    const b = await two.lg.agent(two.graph, thread('a3'))
    await a.session.append('command/run', { commandId: 'c1', name: 'review' })
    const first = b.session.append('x/one', {})
    const second = b.session.append('x/two', {})
    await expect(first).rejects.toThrow("plan-mode langgraph: the thread's log already has seq 1 (another writer appended first); the x/one event was not written")
    await expect(second).rejects.toThrow()
    const held = (await two.graph.getState(thread('a3'))).values.planLog as { seq: number; type: string }[]
    expect(held.map((e) => [e.seq, e.type])).toEqual([[1, 'command/run']])
  })
})

describe('xstate-plan-mode/langgraph: refused answers', () => {
  it('R146: an answer the service refuses pauses the run again with the refusal; the next answer is recorded (a refused resume does not wedge the thread)', async () => {
    const host = await start()
    const agent = await host.lg.agent(host.graph, thread('a4'))
    await host.planMode.set(agent, true)
    host.script(calls('exit_plan_mode', { plan: PLAN }, 'call-exit-1'))
    const { reviewId } = ((await host.graph.invoke(user('Plan it.'), thread('a4'))) as Paused).__interrupt__![0]!.value as { reviewId: string }
    const refused = (await host.graph.invoke(new Command({ resume: { answers: 'approve it', reviewId } }), thread('a4'))) as Paused
    const again = refused.__interrupt__![0]!.value as { refused?: string; plan: string }
    expect(again.plan).toBe(PLAN)
    expect(again.refused).toMatch(/^answerReview needs a reviewId string and an answer .*; nothing was changed$/)
    host.script(says('Carrying it out.'))
    const done = (await host.graph.invoke(new Command({ resume: { ...APPROVE, reviewId } }), thread('a4'))) as Paused
    expect(done.__interrupt__ ?? []).toEqual([])
    expect((await reviews(host, 'a4')).map(([, outcome]) => outcome)).toEqual(['requested', 'approved'])
  })
})

describe('xstate-plan-mode/langgraph: an answer names its review', () => {
  it('R146: an answer that names no review is refused and records nothing; the run pauses again at the open review with the refusal', async () => {
    const host = await start()
    const agent = await host.lg.agent(host.graph, thread('a5'))
    await host.planMode.set(agent, true)
    host.script(calls('exit_plan_mode', { plan: PLAN }, 'call-exit-1'))
    const { reviewId } = ((await host.graph.invoke(user('Plan it.'), thread('a5'))) as Paused).__interrupt__![0]!.value as { reviewId: string }
    const unnamed = (await host.graph.invoke(new Command({ resume: APPROVE }), thread('a5'))) as Paused
    expect(unnamed.__interrupt__![0]!.value).toMatchObject({ reviewId, plan: PLAN, refused: UNNAMED_ANSWER_MESSAGE })
    expect(UNNAMED_ANSWER_MESSAGE).toBe(
      'plan-mode langgraph: an answer must name the review it answers (resume with { reviewId, answers }, the reviewId of the interrupt); nothing was recorded',
    )
    expect((await reviews(host, 'a5')).map(([, outcome]) => outcome)).toEqual(['requested'])
    host.script(says('Carrying it out.'))
    await host.graph.invoke(new Command({ resume: { ...APPROVE, reviewId } }), thread('a5'))
    expect((await reviews(host, 'a5')).map(([, outcome]) => outcome)).toEqual(['requested', 'approved'])
  })
})
