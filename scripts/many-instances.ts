/**
 * `npm run instances`: two instances of a host, two Node processes, on one PostgreSQL database
 * (a throwaway local cluster of Debian's postgresql-15). Instance A switches plan mode on; B's next
 * step runs in it and its model presents a plan; A's user approves; B's next step carries it out.
 * Each process prints what it saw. With `--port <n>` it uses a running server on 127.0.0.1.
 */
import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { onServer, startInstance } from '../examples/many-instances.js'
import { startTestPostgres } from '../apps/shared/local-postgres.js'

const PLAN = '# Add the audit log\n\n1. Create the table.\n2. Write to it on every change.'
const APPROVE = { answers: [{ id: 'plan-review', selected: ['Approve'] }] }
const SESSION = 'chat-42'

/** The instance run by a child process: it waits for its cue, acts, and says what it saw. */
async function instance(name: 'A' | 'B', port: number): Promise<void> {
  const { db, listen } = onServer({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' })
  const host = await startInstance(db, listen)
  const agent = await host.agent(SESSION)
  const say = (line: string) => process.send!({ line: `${name}: ${line}` })
  const until = async (check: () => boolean) => {
    while (!check()) await new Promise((resolve) => setTimeout(resolve, 10))
  }
  const act = async ({ cue, seq }: { cue: string; seq: number }) => {
    const { planMode } = host
    // Decide on the log the other instance left: its last event has reached this one (R84: an
    // instance that appended on a stale view would be refused).
    await until(() => (agent.session.events.at(-1)?.seq ?? 0) >= seq)
    if (cue === 'A1') {
      await agent.session.append('turn/start', {})
      say(`/plan → ${(await planMode.command.run({ agent, rawInput: '' })).text}`)
      const step = await planMode.stepBoundary(agent)
      say(`step: section ${step.section ? 'on' : 'off'}`)
      await agent.session.append('turn/end', {})
    } else if (cue === 'B1') {
      await until(() => planMode.get(agent).active)
      await agent.session.append('turn/start', {})
      const step = await planMode.stepBoundary(agent)
      say(`step: section ${step.section ? 'on' : 'off'}`)
      const result = await planMode.exitTool.execute({ plan: PLAN }, { agent })
      say(`exit_plan_mode → ${'submitted' in result ? 'submitted for review' : 'approved'}`)
      await agent.session.append('turn/end', {})
    } else if (cue === 'A2') {
      await until(() => planMode.openReview(agent) !== null)
      const review = planMode.openReview(agent)!
      say(`review open: "${review.title}"`)
      say(`answer → ${await planMode.answerReview(agent, review.reviewId, APPROVE)}`)
    } else if (cue === 'B2') {
      await until(() => planMode.openReview(agent) === null)
      await agent.session.append('turn/start', {})
      const step = await planMode.stepBoundary(agent)
      say(`step: section ${step.section ? 'on' : 'off'}; told: ${step.messages.map((m) => (m.content[0] as { text: string }).text).join(' | ')}`)
      await agent.session.append('turn/end', {})
    } else if (cue === 'stop') {
      await host.close()
      await db.end()
      process.exit(0)
    }
    process.send!({ done: agent.session.events.at(-1)?.seq ?? 0 })
  }
  process.on('message', (message: { cue: string; seq: number }) =>
    act(message).catch((error: unknown) => {
      console.error(error)
      process.exit(1)
    }),
  )
  process.send!({ ready: name })
}

/** Starts the cluster (unless given a port), the two instances, and plays the cues in order. */
async function main(): Promise<void> {
  const portArg = process.argv.indexOf('--port')
  const server = portArg < 0 ? await startTestPostgres() : undefined
  const port = server?.port ?? Number(process.argv[portArg + 1])
  const script = fileURLToPath(import.meta.url)
  const children = (['A', 'B'] as const).map((name) => fork(script, ['--instance', name, '--port', String(port)], { execArgv: process.execArgv }))
  try {
    const ready = children.map(
      (child) =>
        new Promise((resolve, reject) => {
          child.on('message', (m: { ready?: string }) => m.ready && resolve(m))
          child.once('exit', (code) => reject(new Error(`an instance exited with code ${code} while starting`)))
        }),
    )
    await Promise.all(ready)
    /** The log's last seq as the instance that acted last left it. */
    let seq = 0
    const cue = (child: (typeof children)[number], name: string) =>
      new Promise<void>((resolve, reject) => {
        const onExit = (code: number | null) => reject(new Error(`instance ${name[0]} exited with code ${code} during ${name}`))
        const onMessage = (m: { line?: string; done?: number }) => {
          if (m.done !== undefined) {
            child.off('message', onMessage).off('exit', onExit)
            seq = m.done
            resolve()
          } else if (m.line) console.log(m.line)
        }
        child.on('message', onMessage).once('exit', onExit)
        child.send({ cue: name, seq })
      })
    const [a, b] = children as [(typeof children)[number], (typeof children)[number]]
    await cue(a, 'A1')
    await cue(b, 'B1')
    await cue(a, 'A2')
    await cue(b, 'B2')
    for (const child of children) child.send({ cue: 'stop', seq: 0 })
    await Promise.all(children.map((child) => new Promise((resolve) => child.on('exit', resolve))))
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
    await server?.destroy()
  }
}

const instanceArg = process.argv.indexOf('--instance')
if (instanceArg >= 0) await instance(process.argv[instanceArg + 1] as 'A' | 'B', Number(process.argv[process.argv.indexOf('--port') + 1]))
else await main()
