// Package session finds, lists and manages the sessions kept under a cairn
// home folder, laid out exactly like Claude Code's ~/.claude: projects/<dir>/
// holds one transcript per session, history.jsonl the typed prompts,
// file-history/ the backups, trash/ what retention took away.
package session
