/**
 * The commands the CLI suggests ("inspect it: …"), spelled the way this run of the CLI was
 * started, so that they work when pasted: `plan-mode` is the installed bin's name, but a clone
 * has no such command on its PATH (`npm run cli -- …` runs it there).
 */
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path'

/** How the running CLI was started. */
export interface Invocation {
  /** The script Node runs (`process.argv[1]`): `apps/cli/bin.ts` in a clone, the `plan-mode` bin, `dist/cli.js`, … */
  script: string | undefined
  /** The directory the user ran the command from (npm runs scripts in the package root and keeps it in `INIT_CWD`). */
  userCwd: string
  /** The process's working directory, against which relative paths were resolved. */
  cwd: string
}

/**
 * This process's invocation. Under an npm script (`npm run cli`), npm runs it in the package's
 * root and keeps the user's directory in `INIT_CWD`; a process that merely inherited npm's
 * variables (started by something an npm script started) runs elsewhere than that root.
 */
export function currentInvocation(env: Record<string, string | undefined> = process.env): Invocation {
  const cwd = process.cwd()
  const packageJson = env.npm_package_json
  const underNpm = env.npm_lifecycle_event !== undefined && env.INIT_CWD !== undefined && packageJson !== undefined && resolve(dirname(packageJson)) === resolve(cwd)
  return { script: process.argv[1], userCwd: underNpm ? env.INIT_CWD! : cwd, cwd }
}

/**
 * The command that runs `plan-mode <args>` the way this CLI was run:
 * - from a clone's sources (`apps/cli/bin.ts`, i.e. `npm run demo` or `npm run cli`): `npm run cli -- <args>`,
 *   with `--prefix <clone>` when the user is outside the clone (npm runs it in the clone's root);
 * - from a project's local install (`node_modules/.bin/plan-mode`): `npx plan-mode <args>`;
 * - from a build run by path (`node dist/cli.js`): `node <that path> <args>`;
 * - otherwise (a global install, or `main` embedded in another program): `plan-mode <args>`.
 * @param paths which of `args` are file paths: made absolute where the command runs elsewhere.
 */
export function cliCommand(args: readonly string[], paths: ReadonlySet<number> = new Set(), invocation: Invocation = currentInvocation()): string {
  const { script, userCwd, cwd } = invocation
  const normalized = script === undefined ? '' : script.split(sep).join('/')
  const absolute = (arg: string, i: number) => (paths.has(i) ? resolve(cwd, arg) : arg)
  const asGiven = (arg: string, i: number) => (paths.has(i) && userCwd !== cwd ? resolve(cwd, arg) : arg)

  if (normalized.endsWith('/apps/cli/bin.ts')) {
    const root = dirname(dirname(dirname(script!)))
    const inside = !relative(root, userCwd).startsWith('..') && !isAbsolute(relative(root, userCwd))
    const npm = inside ? 'npm run cli --' : `npm --prefix ${quote(root)} run cli --`
    return [npm, ...args.map(absolute).map(quote)].join(' ')
  }
  if (/\/node_modules\/\.bin\/plan-mode(\.[a-z]+)?$/i.test(normalized)) {
    return ['npx plan-mode', ...args.map(asGiven).map(quote)].join(' ')
  }
  if (normalized.endsWith('/dist/cli.js') && !normalized.includes('/node_modules/')) {
    const near = relative(userCwd, script!)
    const path = near.startsWith('..') || isAbsolute(near) ? script! : near
    return ['node', quote(path), ...args.map(asGiven).map(quote)].join(' ')
  }
  return ['plan-mode', ...args.map(asGiven).map(quote)].join(' ')
}

/** The hint printed after a session: how to read its log with `plan-mode inspect`. */
export function inspectHint(logPath: string, invocation: Invocation = currentInvocation()): string {
  return `inspect it: ${cliCommand(['inspect', logPath], new Set([1]), invocation)}`
}

/** An argument as a POSIX shell reads it back: as is when it is plain, else single-quoted. */
function quote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`
}
