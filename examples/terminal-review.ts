import type { Interface } from 'node:readline/promises'
import type { ReviewChannel } from 'xstate-plan-mode'

/** Plan reviews in a terminal: the plan, then Approve, or Keep planning with feedback; an empty answer dismisses. */
export function createTerminalReview(rl: Interface, output: NodeJS.WritableStream = process.stdout): ReviewChannel {
  return {
    async ask({ questions: [question], signal }) {
      // `signal` aborts when the review closes unanswered (a /plan, the tool call's abort, a reload): stop asking.
      output.write(`\n${question.header}\n\n${question.detail}\n\n`)
      question.options.forEach((option, i) => output.write(`  ${i + 1}. ${option.label}: ${option.description}\n`))
      const choice = (await rl.question(`${question.question} [1-${question.options.length}, empty to dismiss] `, { signal })).trim()
      if (choice === '') throw Object.assign(new Error('review dismissed'), { code: 'ASK_CANCELLED' }) // the user speaks instead
      const label = question.options[Number(choice) - 1]?.label ?? choice
      if (label === question.intent.approve) return { answers: [{ id: question.id, selected: [label] }] }
      const feedback = await rl.question('What should change? ', { signal }) // goes to the model verbatim
      return { answers: [{ id: question.id, selected: [label], custom: feedback }] }
    },
  }
}
