/**
 * The command line "TPU Lint: Trace a Run" types into a terminal. Pure (no `vscode` import), so
 * the unit tests can check the quoting.
 */

/** Quotes a word for a POSIX shell. */
export function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The default command to trace: the interpreter running the script, both quoted. */
export function defaultTracedCommand(interpreter: string, script: string): string {
  return `${shellQuote(interpreter)} ${shellQuote(script)}`;
}

/** `tpulint trace run -- <command>`: the command as the user typed (or accepted) it, after `--`
 * so that none of its options reach tpulint. */
export function traceRunLine(serverPath: string, command: string): string {
  return `${shellQuote(serverPath)} trace run -- ${command.trim()}`;
}
