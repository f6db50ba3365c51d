import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** A service bundle built from another commit, to be driven beside this one. */
export interface BuiltRevision {
  /** The commit, abbreviated, as the report names it. */
  commit: string
  /** Its dist/ folder, for startService. */
  dist: string
  remove(): Promise<void>
}

type Lock = { packages: Record<string, { version?: string }> }

/**
 * The packages `theirs` (a package-lock.json) installs at another version than `ours`, or that
 * `ours` does not install. Packages only `ours` has are no matter: the revision never loads them.
 */
function packagesMissingFrom(ours: string, theirs: string): string[] {
  const installed = (JSON.parse(ours) as Lock).packages
  return Object.entries((JSON.parse(theirs) as Lock).packages)
    .filter(([name, { version }]) => name !== '' && installed[name]?.version !== version)
    .map(([name]) => name)
}

/**
 * Builds the server bundle of `revision` in a temporary worktree of this repository. The worktree
 * uses this checkout's installed packages, so every package the revision installs must be installed
 * here at the same version (a benchmark of a dependency change needs two checkouts instead).
 */
export async function buildRevision(root: string, revision: string): Promise<BuiltRevision> {
  const git = (...args: string[]) => run('git', args, { cwd: root, maxBuffer: 64 * 1024 * 1024 })
  const commit = (await git('rev-parse', '--short', `${revision}^{commit}`)).stdout.trim()
  const theirs = await git('show', `${commit}:package-lock.json`).then(({ stdout }) => stdout)
  const ours = await readFile(path.join(root, 'package-lock.json'), 'utf8')
  const differing = packagesMissingFrom(ours, theirs)
  if (differing.length > 0)
    throw new Error(
      `${revision} installs packages this checkout does not have as it has them (${differing.slice(0, 5).join(', ')}): build it in a checkout of its own`,
    )
  const tree = await mkdtemp(path.join(tmpdir(), 'ehr-bench-revision-'))
  const remove = async () => {
    await git('worktree', 'remove', '--force', tree).catch(() => {})
    await rm(tree, { recursive: true, force: true })
  }
  try {
    await git('worktree', 'add', '--detach', tree, commit)
    await symlink(path.join(root, 'node_modules'), path.join(tree, 'node_modules'), 'dir')
    await run(process.execPath, ['--import', 'tsx', 'scripts/bundle/index.ts'], {
      cwd: tree,
      maxBuffer: 64 * 1024 * 1024,
    })
  } catch (error) {
    await remove()
    throw error
  }
  return { commit, dist: path.join(tree, 'dist'), remove }
}
