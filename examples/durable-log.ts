import { createPlanMode } from 'xstate-plan-mode'
import { openJsonlPendingStore, openJsonlSessionLog } from 'xstate-plan-mode/node'

/** A host whose plan state survives a crash: the JSONL log is the truth, the store keeps P. */
export async function openDurableAgent(dir: string) {
  const session = await openJsonlSessionLog(`${dir}/session.jsonl`) // one writer; fsync per append
  const pendingStore = openJsonlPendingStore(`${dir}/pending.json`) // a /plan made after the last step
  const planMode = createPlanMode({ section: 'Plan mode is on.', pendingStore })
  const agent = { id: 'main', session }
  return { planMode, agent, close: () => planMode.dispose().then(() => session.close()) }
}
