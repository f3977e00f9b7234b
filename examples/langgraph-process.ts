import { HumanMessage } from '@langchain/core/messages'
import { Command } from '@langchain/langgraph'
import { FileSaver, scriptedModel, startCodingAgent, workspace } from './langgraph-agent.js'

/**
 * One process of the example's host, on the checkpoint file given: `plan <file>` turns plan mode
 * on, asks for the change and keeps planning with the user's feedback, and exits with version 2
 * waiting for review; `approve <file>`, a later process, approves it and the agent carries it out.
 */
const [command, file] = process.argv.slice(2)
const thread = { configurable: { thread_id: 'retries' } }
const { planMode, lg, graph } = await startCodingAgent(new FileSaver(file!), scriptedModel)
/** The plan a run paused at: the review's request, `interrupt()`'s value in `__interrupt__`. */
const pausedAt = (result: object) => JSON.stringify((result as { __interrupt__: { value: { plan: string } }[] }).__interrupt__[0]!.value.plan)

if (command === 'plan') {
  console.log((await planMode.command.run({ agent: await lg.agent(graph, thread), rawInput: '' })).text)
  console.log(pausedAt(await graph.invoke({ messages: [new HumanMessage('Make the config load retry.')] }, thread)))
  // An answer names the review it answers, as the card showed it (R146).
  const { reviewId } = planMode.openReview(await lg.agent(graph, thread))!
  const feedback = { reviewId, answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: 'Also log each retry.' }] }
  console.log(pausedAt(await graph.invoke(new Command({ resume: feedback }), thread)))
} else if (command === 'approve') {
  const { reviewId } = planMode.openReview(await lg.agent(graph, thread))!
  const done = await graph.invoke(new Command({ resume: { reviewId, answers: [{ id: 'plan-review', selected: ['Approve'] }] } }), thread)
  console.log(done.messages.at(-1)!.content)
  console.log(JSON.stringify(workspace.get('src/config.ts')))
  console.log(JSON.stringify(planMode.get(await lg.agent(graph, thread))))
} else {
  throw new Error('usage: langgraph-process.ts plan|approve <checkpoint file>')
}
await planMode.dispose()
