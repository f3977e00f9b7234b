/**
 * `node --import ./apps/shared/register.mjs file.ts`: lets Node 20 run the apps' TypeScript
 * (`apps/`) directly, with `xstate-plan-mode` resolved to the library's sources in
 * `src/` (see ts-loader.mjs).
 */
import { register } from 'node:module'

register('./ts-loader.mjs', import.meta.url)
