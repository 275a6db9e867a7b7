// Package shellsafe reads a Bash command line the way the shell would,
// without running it, so that permissions are decided on what would run
// rather than on how the text looks (SPEC G4).
//
// [Parse] turns a line into a [Script]: every simple command it would run,
// wherever it hides — behind &&, ||, ; and pipes, in subshells, blocks,
// if/for/while/case bodies and functions, inside $(…), backticks, <(…) and
// here-documents — with its words resolved to the literal strings the
// program would receive ('git' status, g\it and $'\x67it' are all "git").
// Redirections are reported with their targets and whether they write.
// Wrappers that run another command (sudo, env, nice, nohup, timeout,
// stdbuf, time, command, builtin, exec, xargs, find -exec, eval, sh -c,
// bash -c, a shell fed a here-document) are unwrapped: the command they run
// is reported as [Command.Inner].
//
// Anything that cannot be known without running the line is flagged, never
// guessed: a parameter expansion, a command substitution or arithmetic
// in a word, a glob or expansion in command position, eval or sh -c of
// text that is not fixed, an assignment to PATH or IFS that changes what
// later words mean, and input that does not parse. Such words are marked
// [Word.Dynamic] and the script [Script.Dynamic], with reasons.
//
// [Classify] answers the two safety questions a tool must answer for a
// command line (SPEC A1): does it only read, and may it destroy work?
// The answers come from a table of common commands; a command the table
// does not know is neither read-only nor destructive.
//
// Everything here is pure and safe for concurrent use; only
// [Options.Exists] (used to tell whether a '>' would overwrite a file)
// touches the file system.
package shellsafe
