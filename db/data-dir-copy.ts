import { constants } from 'node:fs'
import { copyFile, mkdir, readdir, rename, rm } from 'node:fs/promises'
import path from 'node:path'

/**
 * Copies a tree of directories and files, the files all at once (a data directory holds over a
 * thousand, and copying them one at a time, as `fs.cp` does, was measurably slower:
 * docs/performance-log.md), each cloned where the file system can (Btrfs, XFS, APFS) and copied
 * elsewhere.
 */
async function copyTree(from: string, to: string): Promise<void> {
  const entries = await readdir(from, { withFileTypes: true, recursive: true })
  const target = (entry: { parentPath: string; name: string }) =>
    path.join(to, path.relative(from, path.join(entry.parentPath, entry.name)))
  await mkdir(to)
  for (const entry of entries) if (entry.isDirectory()) await mkdir(target(entry), { recursive: true })
  const files = entries.filter((entry) => !entry.isDirectory())
  const other = files.find((entry) => !entry.isFile())
  if (other) throw new Error(`Cannot copy ${target(other)}: neither a file nor a directory`)
  await Promise.all(
    files.map((entry) =>
      copyFile(path.join(entry.parentPath, entry.name), target(entry), constants.COPYFILE_FICLONE),
    ),
  )
}

/**
 * Copies a data directory into place whole or not at all: a copy cut short (a crash, a full disk)
 * is left under another name, where the next start would not take it for a database and open it.
 */
export async function copyDataDir(from: string, to: string): Promise<void> {
  const partial = `${to}.partial`
  await rm(partial, { recursive: true, force: true })
  await copyTree(from, partial)
  await rename(partial, to)
}
